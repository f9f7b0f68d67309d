"""Token tagging as TensorFlow ops: sentences in, windows of words out.

The in-graph twin of `tasks/tagging/features.py` (`convert_sentences`,
`assemble_sentence_predictions`), for raw-text SavedModels: both take their
settings from one `features.TaggingWindowConfig` and cut the same windows
(tests/tasks/tagging/test_tagging_twins.py).

A batch of sentences goes through the steps of `run_tagging.py`
(`tagging_features.convert_sentence`), inside the graph:

1. A sentence is split into words at whitespace: the characters for which
   Python's `str.isspace()` is true, as `str.split()` (the CoNLL reader's
   split) does. A word is what the runner reads as one word: a CoNLL line's
   first column, a People's Daily `word/TAG` token's word. Chinese text
   must come segmented, words separated by spaces, as People's Daily's
   are; an unsegmented Chinese sentence is one word (labelled at its first
   character).
2. Each word is tokenized on its own; a word that gives no piece (only
   control characters, say) becomes "[UNK]", and a word keeps at most
   `max_seq_length - 2` pieces.
3. A sentence of more than `max_seq_length - 2` pieces is cut into windows
   `doc_stride` pieces apart (`windows.sliding_windows`); a window holds
   the words whose first piece it contains, and each word is predicted in
   the window where its first piece has most context. No word is dropped.
4. Each window is `[CLS] pieces [SEP]`, segment ids 0; `word_positions`
   points at each of its words' first piece.

After the model, `labels` puts each word's predicted label id (from its
owning window) back in its sentence.
"""

import tensorflow as tf

from bert_tf.data import windows as windows_lib
from bert_tf.tasks.tagging import features as features_lib
from bert_tf.text import graph_tokenizer
from bert_tf.text.graph_tokenizer import python_whitespace_class


def word_separator_pattern():
    """RE2 pattern of the runs of whitespace between words (`str.split`)."""
    return python_whitespace_class() + "+"


class TaggingWindows:
    """Builds the windows of a batch of sentences and reads labels back."""

    def __init__(self, tokenizer, config):
        """Args:
          tokenizer: a `GraphFullTokenizer`.
          config: a `features.TaggingWindowConfig`, the Python windows'.

        Raises:
          ValueError: lengths that cannot work (the runner's checks).
        """
        config.check()
        self.tokenizer = tokenizer
        self.config = config
        self.cls_id = tokenizer.token_id("[CLS]")
        self.sep_id = tokenizer.token_id("[SEP]")
        self.unk_id = tokenizer.token_id("[UNK]")
        self._separator = word_separator_pattern()

    def features(self, text):
        """The model inputs of every window of a batch of sentences.

        Args:
          text: string [batch], one sentence each.

        Returns:
          `(inputs, windows)`: `inputs` a dict of int32
          [num_windows, max_seq_length]: `input_ids`, `input_mask`,
          `segment_ids`, `word_positions`, `word_mask`; `windows` what
          `labels`
          needs, with `words` (string `RaggedTensor` [batch, (words)]).
        """
        words = graph_tokenizer.split_at(text, self._separator)
        flat_words = words.flat_values
        num_words = tf.shape(flat_words)[0]
        pieces = self.tokenizer.tokenize(flat_words)  # [words, (pieces)]
        empty = tf.equal(pieces.row_lengths(), 0)
        unknown = tf.ragged.boolean_mask(
            tf.fill([num_words, 1], self.unk_id), empty[:, tf.newaxis])
        pieces = tf.concat([tf.cast(pieces, tf.int32), unknown], axis=1)
        max_seq_length = self.config.max_seq_length
        pieces = pieces[:, :max_seq_length - 2]
        word_lengths = tf.cast(pieces.row_lengths(), tf.int32)
        # Global piece numbers: sentence after sentence, word after word.
        word_first_piece = tf.cumsum(word_lengths, exclusive=True)
        sentence_pieces = tf.math.unsorted_segment_sum(
            word_lengths, tf.cast(words.value_rowids(), tf.int32),
            tf.shape(text)[0])
        spans = windows_lib.sliding_windows(
            sentence_pieces, max_seq_length - 2, self.config.doc_stride)
        window_pieces = spans["pieces"]
        num_windows = tf.shape(spans["starts"])[0]
        # The window's first piece and the piece after its last, globally.
        begin = spans["first_piece"]
        end = begin + spans["lengths"]

        def search(values):
            # First pieces increase strictly: words in [begin, end) form a
            # range of global word numbers.
            return tf.cast(tf.searchsorted(
                word_first_piece[tf.newaxis], values[tf.newaxis],
                side="left")[0], tf.int32)

        first_word = search(begin)
        window_words = tf.ragged.range(first_word, search(end))
        positions = (tf.gather(word_first_piece, window_words)
                     - begin[:, tf.newaxis] + 1)
        ids = tf.concat([
            tf.fill([num_windows, 1], self.cls_id),
            tf.gather(pieces.flat_values, window_pieces),
            tf.fill([num_windows, 1], self.sep_id)], axis=1)
        shape = [num_windows, max_seq_length]
        inputs = {
            features_lib.INPUT_IDS: ids.to_tensor(0, shape=shape),
            features_lib.INPUT_MASK: tf.ones_like(ids).to_tensor(
                0, shape=shape),
            features_lib.SEGMENT_IDS: tf.zeros(shape, tf.int32),
            features_lib.WORD_POSITIONS: positions.to_tensor(0, shape=shape),
            features_lib.WORD_MASK: tf.ones_like(window_words).to_tensor(
                0, shape=shape),
        }
        # Each word's window: the owner of its first piece.
        word_window = tf.gather(spans["owner"], word_first_piece)
        word_slot = tf.range(num_words) - tf.gather(first_word, word_window)
        return inputs, {"words": words, "word_window": word_window,
                        "word_slot": word_slot}

    @staticmethod
    def labels(windows, predicted_ids, label_names):
        """Each word's label, from its owning window's prediction.

        Args:
          windows: from `features`.
          predicted_ids: int32 [num_windows, max_seq_length], the label id
            of each word slot.
          label_names: string [num_labels].

        Returns:
          A string `RaggedTensor` [batch, (words)].
        """
        label_ids = tf.gather_nd(predicted_ids, tf.stack(
            [windows["word_window"], windows["word_slot"]], axis=1))
        return windows["words"].with_flat_values(
            tf.gather(label_names, label_ids))
