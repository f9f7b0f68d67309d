"""Helpers that the tests and the benchmarks share (not installed):
`squad_synthetic` writes SQuAD-layout files of generated questions."""
