"""Token tagging: named entities, part of speech (`run_tagging.py`):
`examples` reads CoNLL, People's Daily and word/tag files, `features`
cuts sentences into windows labelled at each word's first piece,
`metrics` scores tags (seqeval's entity F1, accuracy), `task` is the
`TaggingTask` and its model (+ BiLSTM, + CRF); `graph_windows` does the
words and windows as TensorFlow ops for the raw-text export (both cut as
one `features.TaggingWindowConfig`). `recipe` is run_tagging.py's config
and run, `export` its raw-text export, `python_api` `bert_tf.finetune`'s
and `predict`'s conversions, `spec` its entry in
`bert_tf.tasks.registry`."""
