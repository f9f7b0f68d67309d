"""Hugging Face tokenizer files for a Google vocabulary.

`google_to_hf` writes, next to `vocab.txt`:

- `tokenizer_config.json`: `do_lower_case`, `model_max_length` (the
  config's `max_position_embeddings`), the special tokens and
  `tokenizer_class: BertTokenizer`, which `AutoTokenizer` and keras-hub's
  Hugging Face loader read;
- `special_tokens_map.json`;
- `tokenizer.json` when the optional `tokenizers` package is installed (the
  `hf` extra): a fast tokenizer with Google's pipeline, BERT normalization
  (cleaning, CJK splitting, lower-casing and accent stripping only for
  uncased vocabularies), BERT pre-tokenization, WordPiece with Google's
  200-character word limit (Hugging Face's default is 100), and
  `[CLS] A [SEP] B [SEP]` packing with segment ids 0 / 1.

Known differences between the `tokenizers` library's normalizer and Google's
`FullTokenizer` (and so bert_tf's tokenizers): Rust's lower-casing maps a
final capital sigma ("Σ" at the end of a word) to "σ" where Python's
`str.lower()` gives "ς", and it lower-cases with Rust's (newer) Unicode
tables, which differ from Python's for a few characters.
"""

import json
import os

from bert_tf import file_io
from bert_tf.text import tokenization

TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_NAME = "special_tokens_map.json"
TOKENIZER_JSON_NAME = "tokenizer.json"
# Google's `WordpieceTokenizer(max_input_chars_per_word=200)`.
MAX_INPUT_CHARS_PER_WORD = 200
SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]",
                  "pad_token": "[PAD]", "cls_token": "[CLS]",
                  "mask_token": "[MASK]"}


def _write_atomically(path, text):
    with file_io.atomic_write(path) as writer:
        writer.write(text)


def _json_text(values):
    return json.dumps(values, indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def tokenizer_files(vocab_file, do_lower_case, model_max_length):
    """The tokenizer files' contents: {file name: text}.

    Args:
      vocab_file: the Google `vocab.txt`.
      do_lower_case: whether the model is uncased.
      model_max_length: the longest input the model takes.

    Returns:
      A dict from file name to its text. `tokenizer.json` is included only
      when the `tokenizers` package can be imported and the vocabulary has
      "[UNK]".
    """
    vocab = tokenization.load_vocab(vocab_file)
    special = {name: token for name, token in SPECIAL_TOKENS.items()
               if token in vocab}
    files = {
        SPECIAL_TOKENS_MAP_NAME: _json_text(special),
        TOKENIZER_CONFIG_NAME: _json_text({
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": bool(do_lower_case),
            "do_basic_tokenize": True,
            "tokenize_chinese_chars": True,
            "strip_accents": None,  # as do_lower_case, Google's behaviour
            "model_max_length": int(model_max_length),
            "clean_up_tokenization_spaces": True,
            **special,
        }),
    }
    if SPECIAL_TOKENS["unk_token"] not in vocab:
        # WordPiece needs it for words it cannot split.
        return files
    try:
        import tokenizers
    except ImportError:
        return files
    from tokenizers import decoders, models, normalizers, pre_tokenizers
    from tokenizers import processors
    tokenizer = tokenizers.Tokenizer(models.WordPiece(
        vocab=dict(vocab), unk_token=SPECIAL_TOKENS["unk_token"],
        max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None,
        lowercase=bool(do_lower_case))
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    cls, sep = SPECIAL_TOKENS["cls_token"], SPECIAL_TOKENS["sep_token"]
    if cls in vocab and sep in vocab:
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{cls}:0 $A:0 {sep}:0",
            pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    files[TOKENIZER_JSON_NAME] = tokenizer.to_str(pretty=True)
    return files


def write_tokenizer_files(vocab_file, do_lower_case, model_max_length,
                          output_dir):
    """Writes `tokenizer_files` into `output_dir` (each atomically, 0644).

    Returns:
      The paths written.
    """
    written = []
    for name, text in tokenizer_files(vocab_file, do_lower_case,
                                      model_max_length).items():
        path = os.path.join(output_dir, name)
        _write_atomically(path, text)
        written.append(path)
    return written
