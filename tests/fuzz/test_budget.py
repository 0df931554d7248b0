"""The fuzz profile exists and is deterministic (a fuzz run is repeatable)."""

from __future__ import annotations

from hypothesis import settings


def test_fuzz_profile_is_repeatable() -> None:
    profile = settings.get_profile("clusterloom-fuzz")
    assert profile.derandomize
    assert profile.database is None
    assert profile.max_examples >= 10
