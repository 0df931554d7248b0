"""Designs for the report tests, built once per session."""

from __future__ import annotations

import pytest
from report_specs import HOSTILE_SPEC

from clusterloom import Design
from helpers import OPTIONS_SPEC, TWO_FABRIC_SPEC, design_of


@pytest.fixture(scope="session")
def two_fabrics() -> Design:
    return design_of(TWO_FABRIC_SPEC)


@pytest.fixture(scope="session")
def hostile() -> Design:
    return design_of(HOSTILE_SPEC)


@pytest.fixture(scope="session")
def options_design() -> Design:
    return design_of(OPTIONS_SPEC)
