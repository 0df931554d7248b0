"""Designs shared by the export tests, built once per session."""

from __future__ import annotations

import pytest
from export_specs import IB_SPEC

from clusterloom import Design
from helpers import OPTIONS_SPEC, TWO_FABRIC_SPEC, design_of


@pytest.fixture(scope="session")
def demo() -> Design:
    return design_of(TWO_FABRIC_SPEC)


@pytest.fixture(scope="session")
def ib() -> Design:
    return design_of(IB_SPEC)


@pytest.fixture(scope="session")
def options_design() -> Design:
    return design_of(OPTIONS_SPEC)
