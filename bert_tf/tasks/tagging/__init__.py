"""Token tagging: named entities, part of speech (`run_tagging.py`):
`examples` reads CoNLL, People's Daily and word/tag files, `features`
cuts sentences into windows labelled at each word's first piece,
`metrics` scores tags (seqeval's entity F1, accuracy), `task` is the
`TaggingTask` and its model (+ BiLSTM, + CRF); `graph_windows` does the
words and windows as TensorFlow ops for the raw-text export."""
