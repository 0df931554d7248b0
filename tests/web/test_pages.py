"""The explorer's pages and JSON API on a real store: what each shows agrees with the store."""

from __future__ import annotations

import hashlib
import re

import pytest
from fastapi.testclient import TestClient

from clusterloom.web.format import figure
from conftest import World, bearer


@pytest.fixture
def c(reader: TestClient) -> TestClient:
    return reader


def test_design_list_shows_each_design_and_its_figures(c: TestClient, world: World) -> None:
    page = c.get("/").text
    for d in (world.tight, world.campus):
        assert f'href="/designs/{d.id}"' in page
        for key in ("accelerators", "switches", "cost_usd", "power_w"):
            assert figure(key, d.summary[key]) in page
    assert world.campus.summary["accelerators"] == 64
