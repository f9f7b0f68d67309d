"""Tokenization: Google-exact pure-Python tokenizer, in-graph tokenizer, vocabularies."""

from bert_tf.text.tokenization import (
    BasicTokenizer,
    FullTokenizer,
    UnknownVocabularyEntryError,
    WordpieceTokenizer,
    convert_to_unicode,
    load_vocab,
    printable_text,
    validate_case_matches_checkpoint,
)

__all__ = [
    "BasicTokenizer",
    "FullTokenizer",
    "UnknownVocabularyEntryError",
    "WordpieceTokenizer",
    "convert_to_unicode",
    "load_vocab",
    "printable_text",
    "validate_case_matches_checkpoint",
]
