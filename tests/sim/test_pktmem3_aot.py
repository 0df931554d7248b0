"""The kernels compiled ahead of time (``sim._aot``): a packet run loads them without numba and
is the JIT's run to the picosecond; a call whose arguments are not exactly the listed types
goes to numba's JIT instead of into machine code that would read them wrongly; a build that
fails leaves the kernels on numba's JIT and is not tried again."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.sim import _aot

#: a child process: runs that go through every exported kernel (``_route_rows``: a failure;
#: ``mrc_export``/``mrc_import``: mrc-spray's state taken by Python's handlers under an
#: incast's drops, counted),
#: their figures, whether numba was imported and how the kernels ran
_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from helpers import packet_figures
from clusterloom.sim import _aot
from clusterloom.sim.failures import parse_failure
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.packet.run import run_packets
from clusterloom.sim.packet import transports
from clusterloom.sim.traffic import incast, permutation

from clusterloom.sim import paths

calls = {}
def counted(module, name):
    real = getattr(module, name)
    calls[name] = 0
    def call(*a):
        calls[name] += 1
        return real(*a)
    setattr(module, name, call)
for name in ("mrc_export", "mrc_import"):
    counted(transports._core, name)
for name in ("_route_fast", "_route_rows"):
    counted(paths, name)
t = fat_tree(4)
perm = permutation(t.plan.hosts, 120_000, seed=3)
fail = (parse_failure("switch:24@20us", t),)
out = {}
for tr in ("mrc-spray", "receiver-driven", "roce-ecmp"):
    out[tr] = repr(packet_figures(run_packets(t, perm, tr, seed=1)))
    out[tr + " failure"] = repr(packet_figures(run_packets(t, perm, tr, fail, seed=1)))
out["incast"] = repr(packet_figures(run_packets(t, incast(8, 300_000, n_hosts=16), "mrc-spray")))
print(json.dumps({"runs": out, "numba": "numba" in sys.modules, "status": _aot.status(),
                  "calls": calls}))
"""


def _child(aot: bool) -> dict[str, Any]:
    env = dict(os.environ, CLUSTERLOOM_AOT="1" if aot else "0")
    env.pop("NUMBA_DISABLE_JIT", None)
    tests = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, tests], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.slow
@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
    reason="no C compiler: the kernels cannot be built ahead of time here (numba's JIT runs)",
)
def test_a_run_loads_no_numba_and_is_the_jit_run() -> None:
    aot, jit = _child(True), _child(False)
    # no numba: every call of every kernel matched its listed types (a mismatch imports it)
    assert not aot["numba"], "the ahead-of-time run imported numba"
    assert jit["numba"]
    for module in _aot.EXPORTS:
        assert aot["status"][module].startswith("compiled ahead of time"), aot["status"]
        assert jit["status"][module].startswith("off"), jit["status"]
    assert min(aot["calls"].values()) > 0  # Python took mrc-spray's state and gave it back
    assert aot["runs"] == jit["runs"]


def test_every_export_is_a_kernel_with_its_parameters() -> None:
    """A kernel whose parameters changed without :data:`EXPORTS` would fail to build and
    quietly run under numba again: caught here."""
    import importlib

    for module, kernels in _aot.EXPORTS.items():
        mod = importlib.import_module(module)
        for name, args in kernels.items():
            k = _aot._KERNELS[module][name]
            assert getattr(mod, name) in (k, k._jit)
            assert len(inspect.signature(k.py_func).parameters) == len(args), name


_ARRAYS = st.sampled_from(["int64", "int32", "uint8", "int8", "bool", "float64"])


@settings(max_examples=60, deadline=None)
@given(
    dtype=_ARRAYS,
    ndim=st.integers(1, 3),
    view=st.sampled_from(["c", "strided", "f", "readonly"]),
    spec=st.sampled_from(["int64[::1]", "int64[:]", "int64[:, ::1]", "uint8[::1]"])
    | st.sampled_from(["boolean[:, ::1]", "int8[:, :, ::1]", "boolean[:]"]),
)
def test_an_array_matches_exactly_when_numba_would_type_it_so(
    dtype: str, ndim: int, view: str, spec: str
) -> None:
    """``_matches`` against numba's own typing: the array's type is the listed one, or the
    listed one is any-layout and the array's dtype and rank are its (and it is writable)."""
    import numba
    from numba.core import sigutils

    a = np.zeros((4,) * ndim, dtype=dtype)
    if view == "strided":
        a = a[(slice(None, None, 2),) * ndim]
    elif view == "f":
        a = np.asfortranarray(a)
    elif view == "readonly":
        a.setflags(write=False)
    want = sigutils.normalize_signature(f"({spec},)")[0][0]
    got = numba.typeof(a)
    same = got == want or (
        want.layout == "A" and got.dtype == want.dtype and got.ndim == want.ndim and got.mutable
    )
    assert _aot._matches((_aot._spec(spec),), (a,)) == same


def test_scalars_match_only_their_numba_type() -> None:
    ok = [("int64", 3), ("int64", np.int64(3)), ("uint64", np.uint64(3)), ("boolean", True)]
    ok.append(("boolean", np.bool_(False)))
    bad = [("int64", True), ("int64", 3.0), ("int64", np.int32(3)), ("uint64", 3)]
    bad += [("boolean", 1), ("int64", "3"), ("uint64", np.int64(3))]
    for spec, x in ok:
        assert _aot._matches((_aot._spec(spec),), (x,)), (spec, x)
    for spec, x in bad:
        assert not _aot._matches((_aot._spec(spec),), (x,)), (spec, x)
    assert not _aot._matches((_aot._spec("int64"),), (1, 2))  # the count too


def test_a_kernel_called_with_other_layouts_goes_to_the_jit_and_agrees() -> None:
    """``_route_fast`` into a Fortran-ordered ``out`` (listed contiguous: the extension would
    write it as C order) runs under numba's JIT, onto the same links as the extension's
    call into a C-ordered one; a strided flow column is any-layout, run by the extension."""
    from clusterloom.sim import paths
    from clusterloom.sim.packet.fabrics import fat_tree

    r = paths.build_router(fat_tree(4))
    v = paths.route_view(r)
    n = 16
    wide = np.zeros((n, 2), dtype=np.int64)
    wide[:, 0] = np.arange(n)
    src, dst = wide[:, 0], (np.arange(n, dtype=np.int64) * 5 + 3) % 16
    port, ev = np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64) * 7919

    def fast(out: Any) -> Any:
        done = np.zeros(n, dtype=np.bool_)
        paths._route_fast(
            r.host_link, r.up, r.down, r.lower_slot, v.link_src, v.link_dst, v.node_pod,
            r.topology.plan.tiers, src, dst, port, ev, np.uint64(5), np.uint64(5 ^ 0x5EED),
            v.up_any, v.down_any, v.n_up, v.n_down, v.upper, v.same, v.cross, v.far, out, done,
        )  # fmt: skip
        assert done.all()
        return out

    kernel = _aot._KERNELS["clusterloom.sim.paths"]["_route_fast"]
    c = fast(np.full((n, r.max_hops), -1, dtype=np.int64))
    f = fast(np.asfortranarray(np.full((n, r.max_hops), -1, dtype=np.int64)))
    assert np.array_equal(c, f)
    assert np.array_equal(c, paths.route(r, src, dst, port, ev, seed=5))
    assert kernel._jit is not None  # the Fortran call compiled under numba
    assert (c[:, 0] >= 0).all()


@contextlib.contextmanager
def _one_kernel_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, kernel: str, body: str
) -> Iterator[Any]:
    """A module ``name`` of one exported kernel ``kernel(a)`` (an ``int64[::1]``), imported
    from ``tmp_path`` with the extension cache there; its kernels, extension and status
    forgotten afterwards. Its exports are known only to this process, so a child cannot
    build it."""
    (tmp_path / f"{name}.py").write_text(
        f"from clusterloom.sim._aot import njit\n\n@njit(cache=False)\ndef {kernel}(a):\n{body}"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CLUSTERLOOM_AOT_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CLUSTERLOOM_AOT", "1")
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    monkeypatch.setitem(_aot.EXPORTS, name, {kernel: ("int64[::1]",)})
    try:
        yield importlib.import_module(name)
    finally:
        _aot._KERNELS.pop(name, None)
        _aot._LOADED.pop(name, None)
        _aot._WHY.pop(name, None)
        sys.modules.pop(name, None)


def test_a_failed_build_leaves_the_jit_and_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module the child cannot build (its exports are known only to this process): the
    failure is recorded once, the kernel still runs (numba's JIT), and a second load does not
    build again."""
    monkeypatch.setattr(_aot, "_numba_loaded", lambda: False)  # as in a run without numba
    body = "    s = 0\n    for x in a:\n        s += 2 * x\n    return s\n"
    with _one_kernel_module(tmp_path, monkeypatch, "pm3_tiny", "twice", body) as pm3_tiny:
        assert pm3_tiny.twice(np.arange(5, dtype=np.int64)) == 20
        assert "build failed (" in _aot.status()["pm3_tiny"]
        failed = list((tmp_path / "cache").glob("_aot_pm3_tiny_*.failed"))
        assert len(failed) == 1 and "pm3_tiny" in failed[0].read_text()
        del _aot._LOADED["pm3_tiny"]  # a new process, as far as the cache can tell
        assert _aot._extension("pm3_tiny") is None
        assert "failed before" in _aot.status()["pm3_tiny"]


def test_a_process_with_numba_loaded_does_not_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """numba already imported (this process: a flow run's kernels are numba's): a missing
    extension is not built, the kernel runs under the JIT, and nothing is written."""
    assert "numba" in sys.modules
    body = "    return 3 * a.sum()\n"
    with _one_kernel_module(tmp_path, monkeypatch, "pm3_loaded", "thrice", body) as pm3_loaded:
        assert pm3_loaded.thrice(np.arange(4, dtype=np.int64)) == 18
        assert _aot.status()["pm3_loaded"].startswith("numba's JIT (numba already loaded")
        cache = tmp_path / "cache"
        assert not cache.exists() or not any(cache.iterdir())
