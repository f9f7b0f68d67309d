"""Pretraining (`create_pretraining_data.py`, `run_pretraining.py`):
`corpus` reads and tokenizes the text, `instances` makes Google's masked-LM
and next-sentence instances (`exact_random`: Python's RNG draws, in C in
`_native.c` where built; `chinese_words`: whole-word groups of Chinese
text), `records` writes and parses them, `beam` runs the same per shard on
Apache Beam, `dataset` and `dynamic_masking` feed the trainer, `task` is the
`PretrainingTask` and its model; `errors` holds the input error they share."""
