"""Test configuration: make ``tests/helpers.py`` importable and set Hypothesis defaults."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Topology generation takes a few milliseconds per example; timing varies on shared CI runners.
settings.register_profile(
    "clusterloom",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("clusterloom")
