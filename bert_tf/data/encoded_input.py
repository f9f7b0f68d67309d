"""The model inputs every BERT task feeds, and Google's `[CLS]`/`[SEP]` framing.

Every task turns its examples into the same three `max_seq_length` id lists
(Google's feature names, in records and in the model's input dict):

    input_ids    WordPiece ids, zero-padded
    input_mask   1 for real tokens, 0 for padding
    segment_ids  0 for [CLS], text A and its [SEP]; 1 for text B and its
                 [SEP]; 0 for padding

`EncodedInput` holds them; each task's features class extends it with what
the task needs besides (`ClassifierFeatures` a label,
`SquadFeatures` a window and its maps, `ExtractionFeatures` the tokens).

`frame_pair` is Google's framing of one text or a pair,

    [CLS] tokens_a [SEP]                  segment ids 0 ... 0
    [CLS] tokens_a [SEP] tokens_b [SEP]   segment ids 0 ... 0 1 ... 1

with a pair truncated one token at a time from the longer side
(`truncate_seq_pair`) and a single text cut.
"""

import dataclasses
from typing import List, Optional

INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
# 1 for an example of the set, 0 for a row that pads a batch to its full
# size (Google's `PaddingInputExample`s; `in_memory`'s padding rows).
IS_REAL_EXAMPLE = "is_real_example"


@dataclasses.dataclass
class EncodedInput:
    """One sequence as model inputs, each list `max_seq_length` long.

    Attributes:
      input_ids: WordPiece ids, zero-padded.
      input_mask: 1 for real tokens, 0 for padding.
      segment_ids: 0 for [CLS], text A and its [SEP]; 1 for text B and its
        [SEP]; 0 for padding.
    (A subclass may set the three to None once they are no longer needed;
    see `SquadFeatures.without_model_inputs`.)
    """

    input_ids: Optional[List[int]]
    input_mask: Optional[List[int]]
    segment_ids: Optional[List[int]]

    @classmethod
    def padded(cls, input_ids, segment_ids, max_seq_length, **fields):
        """The features of one framed sequence, zero-padded.

        Args:
          input_ids: the sequence's ids, [CLS] and [SEP]s included, at most
            `max_seq_length` of them.
          segment_ids: one segment id per input id.
          max_seq_length: length of every padded list.
          **fields: the subclass's other fields.

        Returns:
          An instance of `cls` with `input_mask` 1 over the sequence.
        """
        num_tokens = len(input_ids)
        padding = [0] * (max_seq_length - num_tokens)
        return cls(input_ids=list(input_ids) + padding,
                   input_mask=[1] * num_tokens + padding,
                   segment_ids=list(segment_ids) + padding,
                   **fields)


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates a pair in place until it has at most `max_length` tokens.

    One token at a time from the end of the longer list (of `tokens_b` when
    both are equally long): a short text loses nothing while a long one
    still has tokens to spare, which keeps more information than cutting
    both by the same fraction.

    Args:
      tokens_a: first token list (modified).
      tokens_b: second token list (modified).
      max_length: the most tokens the two may have together.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def frame_pair(tokens_a, tokens_b, max_seq_length):
    """Google's `[CLS] a [SEP]` / `[CLS] a [SEP] b [SEP]` framing.

    A pair is truncated by `truncate_seq_pair` to leave room for three
    special tokens, a single text (`tokens_b` empty or None) is cut to leave
    room for two. Used by classification and feature extraction.

    Args:
      tokens_a: the first text's word pieces (a pair's are truncated in
        place).
      tokens_b: the second text's, or None/empty for a single text.
      max_seq_length: the most tokens the framed sequence may have.

    Returns:
      `(tokens, segment_ids)`, unpadded: segment 0 for [CLS], text A and
      its [SEP]; 1 for text B and its [SEP].
    """
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_a = tokens_a[:max_seq_length - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    return tokens, segment_ids
