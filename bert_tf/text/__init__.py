"""Tokenization: Google-exact pure-Python tokenizer, in-graph tokenizer, vocabularies."""
