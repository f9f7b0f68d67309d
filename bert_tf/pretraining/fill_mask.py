"""The masked-LM head's guesses for `[MASK]`s in raw text: what
`bert_tf.load(...).fill_mask` runs (the encoder and `MaskedLMHead` of the
pretraining model, on any Keras backend, with the pure-Python tokenizer).
"""

import numpy as np

MASK = "[MASK]"


def mask_ids(tokenizer, text, index, max_seq_length):
    """`[CLS] pieces [SEP]` ids of one text and its masks' positions.

    Args:
      tokenizer: a `FullTokenizer`.
      text: the text, with one or more `[MASK]` written as such.
      index: its index among the inputs, for messages (`texts[3]`).
      max_seq_length: the most pieces, [CLS] and [SEP] included.

    Returns:
      (ids, positions): the ids, and the positions of the masks in them.

    Raises:
      ValueError: the text has no `[MASK]`, or one lies beyond
        `max_seq_length`.
    """
    mask_id = tokenizer.vocab[MASK]
    parts = text.split(MASK)
    if len(parts) == 1:
        raise ValueError(f"texts[{index}]: no {MASK} in {text!r}")
    pieces = []
    for number, part in enumerate(parts):
        if number:
            pieces.append(MASK)
        pieces.extend(tokenizer.tokenize(part))
    ids = tokenizer.convert_tokens_to_ids(pieces)
    room = max_seq_length - 2
    if ids[room:].count(mask_id):
        raise ValueError(
            f"texts[{index}]: a {MASK} lies beyond max_seq_length="
            f"{max_seq_length} word pieces")
    ids = [tokenizer.vocab["[CLS]"]] + ids[:room] + [
        tokenizer.vocab["[SEP]"]]
    return ids, [i for i, token_id in enumerate(ids) if token_id == mask_id]


def pad_masked_batch(ids, positions):
    """input_ids and input_mask of a batch, padded to the longest, and the
    mask positions padded (with 0) to the most masks; int32 arrays."""
    length = max(len(row) for row in ids)
    masks = max(len(row) for row in positions)
    input_ids = np.zeros([len(ids), length], np.int32)
    input_mask = np.zeros([len(ids), length], np.int32)
    mask_positions = np.zeros([len(ids), masks], np.int32)
    for row, (row_ids, row_positions) in enumerate(zip(ids, positions)):
        input_ids[row, :len(row_ids)] = row_ids
        input_mask[row, :len(row_ids)] = 1
        mask_positions[row, :len(row_positions)] = row_positions
    return input_ids, input_mask, mask_positions


def likeliest_pieces(encoder, head, tokenizer, texts, top_k, batch_size,
                     max_seq_length):
    """The `top_k` likeliest pieces for each `[MASK]` of each text.

    Args:
      encoder, head: a loaded `BertModel` and its `MaskedLMHead`.
      tokenizer: the checkpoint's `FullTokenizer`.
      texts: strings, each with one or more `[MASK]`.
      top_k: candidates per mask.
      batch_size: texts per model call.
      max_seq_length: the most pieces of a text.

    Returns:
      One list per text, one list per `[MASK]` in it (in order), of
      `top_k` dicts `{"token": piece, "token_id": id, "probability": p}`,
      likeliest first.

    Raises:
      ValueError: a text has no `[MASK]`, or one is cut off.
    """
    from keras import ops
    results = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        ids, positions = [], []
        for offset, text in enumerate(batch):
            text_ids, text_positions = mask_ids(
                tokenizer, text, start + offset, max_seq_length)
            ids.append(text_ids)
            positions.append(text_positions)
        input_ids, input_mask, mask_positions = pad_masked_batch(
            ids, positions)
        sequence_output = encoder(
            input_ids, input_mask=input_mask, training=False)[
                "sequence_output"]
        logits = head(sequence_output, mask_positions)
        probabilities = ops.convert_to_numpy(
            ops.softmax(logits, axis=-1))  # [batch, masks, vocab]
        # The top_k likeliest, lower ids first among equals (as
        # tf.math.top_k orders them).
        indices = np.argsort(-probabilities, axis=-1,
                             kind="stable")[..., :top_k]
        probabilities = np.take_along_axis(probabilities, indices, axis=-1)
        for row, text_positions in enumerate(positions):
            results.append([
                [{"token": tokenizer.inv_vocab[int(index)],
                  "token_id": int(index),
                  "probability": float(probability)}
                 for index, probability in zip(indices[row, slot],
                                               probabilities[row, slot])]
                for slot in range(len(text_positions))])
    return results
