"""Shared pieces of the top-level runners (flag definitions and wiring)."""
