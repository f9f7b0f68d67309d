"""Tasks: a model with its heads, its loss and its metrics (pretraining, classification, SQuAD)."""
