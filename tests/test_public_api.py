"""The public surface: what ``__all__`` lists is exactly what each package exports."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = [
    "clusterloom",
    "clusterloom.spec",
    "clusterloom.fabric",
    "clusterloom.placement",
    "clusterloom.growth",
    "clusterloom.sim.packet",
    "clusterloom.conformance",
    "clusterloom.srv6",
    "clusterloom.store",
    "clusterloom.web",
    "clusterloom.assist",
    "clusterloom.assist.mcp",
    "clusterloom.capacity",
    "clusterloom.ops",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_matches_exports(name: str) -> None:
    module = importlib.import_module(name)
    public = {
        k
        for k, v in vars(module).items()
        if not k.startswith("_")
        and not isinstance(v, types.ModuleType)
        and k not in {"annotations", "version", "PackageNotFoundError"}
    }
    assert set(module.__all__) - {"__version__"} == public
