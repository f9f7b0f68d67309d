"""TF1 name-based checkpoints and conversion to and from other formats."""
