"""Data: pretraining instances and records, input pipelines, GLUE, SQuAD."""
