"""Sentence embeddings from the encoder: what `bert_tf.load(...).embed`
runs, on any Keras backend (the pure-Python tokenizer, the Keras model).

The same numbers as the `embeddings` export of `export_saved_model.py`
(tokenized in the graph, the same ids): the pooler's output and the mean
of the last layer over the real tokens.
"""

import numpy as np

from bert_tf.data.encoded_input import frame_pair


def sentence_embeddings(encoder, tokenizer, texts, max_seq_length,
                        batch_size):
    """The pooled and mean-pooled outputs of each text.

    Each text is framed as `[CLS] pieces [SEP]` and cut to `max_seq_length`
    pieces, as run_classifier.py frames a text; a batch runs at its longest
    text.

    Args:
      encoder: a loaded `BertModel`.
      tokenizer: its `FullTokenizer`.
      texts: strings.
      max_seq_length: the most pieces of a text, [CLS] and [SEP] included.
      batch_size: texts per model call.

    Returns:
      {"pooled_output": float32 [n, hidden] (dense + tanh on [CLS]),
      "mean_pooled": float32 [n, hidden] (the last layer averaged over the
      real tokens, [CLS] and [SEP] included)}.
    """
    from keras import ops
    batches = []
    for start in range(0, len(texts), batch_size):
        ids = []
        for text in texts[start:start + batch_size]:
            tokens, _ = frame_pair(tokenizer.tokenize(text), None,
                                   max_seq_length)
            ids.append(tokenizer.convert_tokens_to_ids(tokens))
        length = max(len(row) for row in ids)
        input_ids = np.zeros([len(ids), length], np.int32)
        input_mask = np.zeros([len(ids), length], np.int32)
        for row, row_ids in enumerate(ids):
            input_ids[row, :len(row_ids)] = row_ids
            input_mask[row, :len(row_ids)] = 1
        outputs = encoder(input_ids, input_mask=input_mask,
                          segment_ids=np.zeros_like(input_ids),
                          training=False)
        sequence = ops.convert_to_numpy(
            ops.cast(outputs["sequence_output"], "float32"))
        mask = input_mask[:, :, None].astype(np.float32)
        batches.append({
            "pooled_output": ops.convert_to_numpy(
                ops.cast(outputs["pooled_output"], "float32")),
            "mean_pooled": (sequence * mask).sum(axis=1) / mask.sum(axis=1)})
    return {name: np.concatenate([batch[name] for batch in batches])
            for name in ("pooled_output", "mean_pooled")}
