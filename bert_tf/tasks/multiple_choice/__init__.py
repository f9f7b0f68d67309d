"""Multiple choice: SWAG, OpenBookQA, PIQA, ... (`run_multiple_choice.py`):
`examples` reads SWAG CSV and JSON lines and encodes each (context,
choice) pair, `task` is the `MultipleChoiceTask` and its model."""
