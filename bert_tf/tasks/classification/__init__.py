"""GLUE-style classification (`run_classifier.py`), single- and multi-label:
`glue_processors` reads the task files, `features` turns examples into
Google's records and arrays, `metrics` scores predictions, `task` is the
`ClassificationTask` and its model; `multi_label_data` and
`multi_label_task` are the same steps for several labels per example."""
