"""Keras 3 BERT layers whose variable paths are Google's checkpoint names."""
