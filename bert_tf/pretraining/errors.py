"""The error of pretraining-data input, shared by every pretraining module.

Its own module, so that the corpus reader and the Chinese word groups it
uses (`chinese_words`) both raise it without importing each other.
"""


class PretrainingDataError(ValueError):
    """Input that cannot make pretraining data; the message says which."""
