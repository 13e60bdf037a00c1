"""Runnable benchmarks: `make bench` (or `python -m bench [name ...]`)."""
