"""Chinese words for whole-word masking: which characters belong together.

Google's `--do_whole_word_mask` masks a word's WordPiece pieces together,
recognizing continuation pieces by their "##". Chinese text has no "##":
`BasicTokenizer` makes every CJK character a token of its own, so Google's
whole-word masking masks Chinese characters one by one. The Chinese
whole-word-masking models ("wwm") segment the text into words and mask all
characters of a chosen word together, while the token ids stay the plain
characters. This module provides that segmentation:

* `jieba`: the jieba segmenter (an optional dependency) on each line;
* `spaces`: text already segmented, words separated by whitespace;
* `word_tag`: text already segmented and tagged, `word/TAG` items separated
  by whitespace (the People's Daily corpus format); the tags are removed
  from the text, as are the brackets of compound entities
  (`[中央/n 人民/n 广播/vn 电台/n]nt`).

A segmenter maps a line to (the text to tokenize, the index of the word of
each CJK character of that text, in order). The corpus reader then marks a
CJK character token that follows a CJK character token of the same word as
joining it; whole-word masking treats such tokens exactly as "##" pieces.
Only CJK characters are ever joined, so text without them is masked exactly
as before.
"""

import re

from bert_tf.pretraining.errors import PretrainingDataError

SEGMENTATIONS = ("jieba", "spaces", "word_tag")

# Google's `_is_chinese_char` ranges (tokenization.py): the characters
# `BasicTokenizer` splits out one by one.
CJK_CHARACTER_RE = re.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b820-\U0002ceaf\uf900-\ufaff"
    "\U0002f800-\U0002fa1f]")


def is_cjk_character(word):
    """Whether `word` is a single CJK character (a token of its own)."""
    return len(word) == 1 and CJK_CHARACTER_RE.match(word) is not None


def _cjk_word_indexes(words):
    """For each CJK character of `words` (in order), the index of its word."""
    return [index for index, word in enumerate(words)
            for _ in CJK_CHARACTER_RE.findall(word)]


def _strip_tag(item):
    """`word/TAG` -> word; `[word/TAG` and `word/TAG]ne` -> word."""
    word, slash, _ = item.rpartition("/")
    if not slash:
        return item
    if word.startswith("[") and len(word) > 1:
        word = word[1:]
    return word


class WordSegmenter:
    """Splits lines into words; see the module docstring.

    Attributes:
      segmentation: one of `SEGMENTATIONS`.
    """

    def __init__(self, segmentation):
        """Args:
          segmentation: one of `SEGMENTATIONS`.

        Raises:
          PretrainingDataError: an unknown segmentation, or jieba is not
            installed.
        """
        if segmentation not in SEGMENTATIONS:
            raise PretrainingDataError(
                f"unknown word segmentation {segmentation!r}; expected one "
                f"of {', '.join(SEGMENTATIONS)}")
        self.segmentation = segmentation
        self._cut = None
        if segmentation == "jieba":
            try:
                import jieba
            except ImportError:
                raise PretrainingDataError(
                    "--chinese_word_segmenter=jieba needs the jieba package: "
                    "pip install jieba==0.42.1") from None
            jieba.setLogLevel(60)  # No dictionary-loading chatter.
            self._cut = jieba.lcut

    def words(self, line):
        """The words of a (stripped, non-empty) line."""
        if self.segmentation == "jieba":
            return [word for word in self._cut(line) if not word.isspace()]
        if self.segmentation == "spaces":
            return line.split()
        return [_strip_tag(item) for item in line.split()]

    def segment(self, line):
        """(text to tokenize, word index of each of its CJK characters).

        The text is the line itself, except for `word_tag`, where it is the
        words without their tags, separated by spaces.
        """
        words = self.words(line)
        text = " ".join(words) if self.segmentation == "word_tag" else line
        return text, _cjk_word_indexes(words)
