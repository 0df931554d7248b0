"""Moved: ``bench/bench_vs_htsim.py`` (permutation, incast, chained collective; both engines)."""
