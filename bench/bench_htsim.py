"""Moved: ``bench/bench_vs_htsim.py`` (permutation, incast and a chained collective, both engines)."""
