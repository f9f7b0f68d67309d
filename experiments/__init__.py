"""The BERT paper's experiments in miniature (see paper_in_miniature.py)."""
