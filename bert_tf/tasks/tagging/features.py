"""Token-tagging features: word pieces, windows, word-level labels.

Each word of a `TaggedSentence` is split into word pieces by Google's
`FullTokenizer` (a Chinese word gives one piece per character); the word's
label belongs to its first piece, and its other pieces carry no label or
loss. A sentence becomes one or more windows

    [CLS] piece ... piece [SEP] 0 0 ...     segment ids all 0

of at most `max_seq_length - 2` pieces. A sentence longer than that is cut
into windows that overlap, each starting `doc_stride` pieces after the
previous one (as SQuAD's document windows: `data.windows.doc_spans`);
every word is predicted, and counted in metrics and losses, exactly once,
in the window where its first piece has most context
(`data.windows.max_context_owners`). So no word is ever dropped. A word
the tokenizer turns into nothing (only control characters, say) becomes
`[UNK]`, so it is still predicted.

Each window is a feature dict of int32 arrays of length `max_seq_length`:

    input_ids, input_mask, segment_ids   the encoder's inputs
    word_positions   position of each word's first piece, for the words
                     whose first piece is in the window, in order; 0-padded
    word_mask        1 for those words
    label_ids        their label ids (0 when the file has no labels)
    label_weights    1 where this window owns the word (max context)

plus scalars `sentence_index` and `first_word` (the index in the sentence
of the window's first word), which put predictions back in place. Tagging
heads produce logits at every position; the task gathers them at
`word_positions`, so a CRF sees the window's words as one sequence.

The window settings are one `TaggingWindowConfig`, which the raw-text
export's in-graph twin of this module, `graph_windows.TaggingWindows`,
takes too: both cut the same windows and put each word's prediction back
from the same window (tests/tasks/tagging/test_tagging_twins.py).
"""

import dataclasses
from typing import List

import numpy as np

from bert_tf.data import windows as windows_lib

INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
WORD_POSITIONS = "word_positions"
WORD_MASK = "word_mask"
LABEL_IDS = "label_ids"
LABEL_WEIGHTS = "label_weights"
SENTENCE_INDEX = "sentence_index"
FIRST_WORD = "first_word"
SEQUENCE_FEATURES = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS, WORD_POSITIONS,
                     WORD_MASK, LABEL_IDS, LABEL_WEIGHTS)
SCALAR_FEATURES = (SENTENCE_INDEX, FIRST_WORD)


@dataclasses.dataclass(frozen=True)
class TaggingWindowConfig:
    """How a sentence is cut into windows: run_tagging.py's flags of the
    names, with their defaults.

    The Python path (`convert_sentences`, `assemble_sentence_predictions`)
    and its in-graph twin (`graph_windows.TaggingWindows`, in raw-text
    SavedModels) both read them from here.

    Attributes:
      max_seq_length: window length, [CLS] and [SEP] included (>= 3).
      doc_stride: pieces between the starts of consecutive windows.
    """
    max_seq_length: int = 128
    doc_stride: int = 64

    def check(self):
        """Raises ValueError, naming the flag, for lengths that cannot
        work."""
        if self.max_seq_length < 3:
            raise ValueError(f"--max_seq_length={self.max_seq_length} leaves "
                             "no room for a word between [CLS] and [SEP]")
        if self.doc_stride < 1:
            raise ValueError(
                f"--doc_stride={self.doc_stride} must be positive")


@dataclasses.dataclass
class TaggingWindow:
    """One window of one sentence (see the module docstring)."""
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]
    word_positions: List[int]
    word_mask: List[int]
    label_ids: List[int]
    label_weights: List[int]
    sentence_index: int
    first_word: int


def word_pieces(words, tokenizer, max_pieces_per_word):
    """Each word's pieces: at least one (`[UNK]`), at most the cap."""
    pieces = []
    for word in words:
        word_tokens = tokenizer.tokenize(word) or ["[UNK]"]
        pieces.append(word_tokens[:max_pieces_per_word])
    return pieces


def convert_sentence(sentence, sentence_index, label_map, config,
                     tokenizer):
    """The windows of one sentence.

    Args:
      sentence: a `TaggedSentence` (labels may be None).
      sentence_index: its index in the set.
      label_map: label -> id.
      config: a `TaggingWindowConfig`.
      tokenizer: a `FullTokenizer`.

    Returns:
      A list of `TaggingWindow`s; together they own every word once.
    """
    max_seq_length = config.max_seq_length
    max_pieces = max_seq_length - 2
    per_word = word_pieces(sentence.words, tokenizer, max_pieces)
    pieces, piece_word, first_piece = [], [], []
    for word_index, word_tokens in enumerate(per_word):
        first_piece.append(len(pieces))
        pieces.extend(word_tokens)
        piece_word.extend([word_index] * len(word_tokens))
    spans = windows_lib.doc_spans(len(pieces), max_pieces,
                                  config.doc_stride)
    owners = windows_lib.max_context_owners(spans, len(pieces))
    label_ids = ([label_map[label] for label in sentence.labels]
                 if sentence.labels is not None
                 else [0] * len(sentence.words))
    windows = []
    for span_index, span in enumerate(spans):
        tokens = ["[CLS]"] + pieces[span.start:span.start + span.length] + [
            "[SEP]"]
        input_ids = tokenizer.convert_tokens_to_ids(tokens)
        words_here = [word for word in range(len(per_word))
                      if span.start <= first_piece[word]
                      < span.start + span.length]
        positions = [first_piece[word] - span.start + 1
                     for word in words_here]
        weights = [int(owners[first_piece[word]] == span_index)
                   for word in words_here]
        padding = max_seq_length - len(input_ids)
        word_padding = max_seq_length - len(words_here)
        windows.append(TaggingWindow(
            input_ids=input_ids + [0] * padding,
            input_mask=[1] * len(input_ids) + [0] * padding,
            segment_ids=[0] * max_seq_length,
            word_positions=positions + [0] * word_padding,
            word_mask=[1] * len(words_here) + [0] * word_padding,
            label_ids=[label_ids[word] for word in words_here]
            + [0] * word_padding,
            label_weights=weights + [0] * word_padding,
            sentence_index=sentence_index,
            first_word=words_here[0] if words_here else 0))
    return windows


def convert_sentences(sentences, label_list, config, tokenizer):
    """The windows of every sentence, in order.

    Args:
      sentences: `TaggedSentence`s.
      label_list: id -> label.
      config: a `TaggingWindowConfig`.
      tokenizer: a `FullTokenizer`.

    Raises:
      ValueError: `max_seq_length` < 3 or `doc_stride` < 1.
    """
    config.check()
    label_map = {label: index for index, label in enumerate(label_list)}
    windows = []
    for index, sentence in enumerate(sentences):
        windows.extend(convert_sentence(sentence, index, label_map, config,
                                        tokenizer))
    return windows


def windows_to_arrays(windows, max_seq_length):
    """The windows as a dict of int32 numpy arrays, one row per window."""
    arrays = {}
    for name in SEQUENCE_FEATURES:
        arrays[name] = np.asarray(
            [getattr(window, name) for window in windows],
            np.int32).reshape([-1, max_seq_length])
    for name in SCALAR_FEATURES:
        arrays[name] = np.asarray(
            [getattr(window, name) for window in windows], np.int32)
    return arrays


def assemble_sentence_predictions(sentences, arrays, predicted_ids,
                                   label_list):
    """Each sentence's predicted labels from its windows' predictions.

    Args:
      sentences: the `TaggedSentence`s the windows came from.
      arrays: `windows_to_arrays` of their windows.
      predicted_ids: int [num_windows, max_seq_length], the label id of
        each word slot of each window (as `word_mask` lays them out).
      label_list: id -> label.

    Returns:
      A list (one per sentence) of lists of labels, one per word.

    Raises:
      RuntimeError: a word was owned by no window (which would be a bug).
    """
    predicted = [[None] * len(sentence.words) for sentence in sentences]
    for row in range(len(predicted_ids)):
        sentence = predicted[arrays[SENTENCE_INDEX][row]]
        first_word = arrays[FIRST_WORD][row]
        for slot in np.flatnonzero(arrays[LABEL_WEIGHTS][row]):
            sentence[first_word + slot] = label_list[predicted_ids[row][slot]]
    for index, labels in enumerate(predicted):
        if any(label is None for label in labels):
            raise RuntimeError(f"sentence {index}: a word got no prediction")
    return predicted
