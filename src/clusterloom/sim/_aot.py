"""Compiled kernels loaded without numba: each module's kernels built once, ahead of time, into
a shared library that a run imports as machine code (issue 15, docs/packet.md "Memory").

A module writes its kernels as numba functions under this module's :func:`njit` (a drop-in for
``numba.njit``); :data:`EXPORTS` names the kernels Python calls and their argument types. On
the first call of a module's kernel the module's extension is looked for in the cache and, if
missing, built by numba's ahead-of-time compiler (``numba.pycc``) in a child process: the same
numba functions compiled for the listed types, with the module's error model, for this
machine's CPU model (as numba's JIT compiles them). The process that runs the kernels then
never imports numba or llvmlite: it saves numba's import (about 65 MB of resident memory) and
LLVM's set-up and the cached kernels' loading (about 60 MB), the ~125 MB of the packet engine's
180 MB floor that htsim does not pay.

Assumptions and fallbacks (each keeps results identical: the code is the same numba code):

- The extension is keyed by a digest of the module's source, the sources of the clusterloom
  modules it imports (constants are frozen into machine code), this file, the versions of
  Python, numpy, numba and llvmlite, and the machine (architecture, CPU model and flags): any
  change builds a new one. It lives in ``$CLUSTERLOOM_AOT_DIR`` if set, else in the module's
  ``__pycache__`` (as numba's cache), else in ``~/.cache/clusterloom/aot``.
- A call whose arguments are not exactly the listed types (an array of another dtype, rank,
  a non-contiguous one where a contiguous one is listed, a read-only one; a scalar of another
  type) goes to numba's JIT, which is then imported: the machine code converts arguments
  without checking them, so every call is checked first except through :meth:`Kernel.entry`,
  which checks once and hands back the unchecked function (the packet loop's per-event call,
  whose arrays keep their types when they grow, as numba's own entry point assumes).
- No compiler, no numba.pycc, a failed build (recorded next to where the library would be,
  ``<name>.failed`` with the child's error, so it is not tried again for the same digest:
  delete it to retry), ``CLUSTERLOOM_AOT=0`` or ``NUMBA_DISABLE_JIT=1``: the module's
  kernels are numba's JIT dispatchers, as before.
- A process that has imported numba already (a flow run, whose own kernels are numba's) does
  not build a missing extension: it would save nothing there. It uses one that is built.
- The first use on a machine pays the build (about 30 s with numba's cache warm, 60-80 s
  cold, in the child, whose memory, about 230 MB, is the child's); :func:`status` says for
  each module whether it runs compiled ahead of time.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import platform
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, cast

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])
_log = logging.getLogger(__name__)

_A2, _A1, _U1 = "int64[:, ::1]", "int64[::1]", "uint8[::1]"
_STEP_SCALARS = ("int64", "int64", "boolean", "boolean")
_ROUTE_HEAD = (_A2, _A2, "int64[:, :, ::1]", _A1, _A1, _A1, _A1, "int64")
_ROUTE_FLOWS = ("int64[:]", "int64[:]", "int64[:]", "int64[:]", "uint64", "uint64")
_I8 = "int8[:, :, ::1]"
#: the kernels Python calls, per module, with their argument types (numba's spelling; ``[:]``
#: any layout, ``[::1]`` contiguous); everything they call is compiled in with them
EXPORTS: dict[str, dict[str, tuple[str, ...]]] = {
    "clusterloom.sim.packet._core": {
        "step": (_A2, _A2, _A2, _A1, _A2, _A1, _A2, _A2, _A1, _U1, *_STEP_SCALARS),
        "mrc_export": (_A2, _A1, "int64"),
        "mrc_import": (_A2, _A1, "int64", _A2, "int64"),
    },
    "clusterloom.sim.paths": {
        "_route_fast": (
            *(*_ROUTE_HEAD, *_ROUTE_FLOWS, "boolean[::1]", "boolean[:, ::1]", _A1, _A2, _A1),
            *(_I8, _I8, _I8, _A2, "boolean[::1]"),
        ),
        "_route_rows": (
            *(*_ROUTE_HEAD, *_ROUTE_FLOWS, "boolean[:]", "boolean[::1]", "boolean[:, ::1]"),
            *("boolean", _A2),
        ),
    },
}

_KERNELS: dict[str, dict[str, Kernel]] = {}
_LOADED: dict[str, ModuleType | None] = {}
_WHY: dict[str, str] = {}
_DTYPES = {
    "int64": np.dtype(np.int64),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "boolean": np.dtype(np.bool_),
}
_SCALARS: dict[str, tuple[type, ...]] = {
    "int64": (int, np.int64),
    "uint64": (np.uint64,),
    "boolean": (bool, np.bool_),
}


def _spec(text: str) -> tuple[Any, ...]:
    """``(dtype, ndim, contiguous)`` of an array type, ``(types,)`` of a scalar's."""
    base, _, dims = text.partition("[")
    if not dims:
        return (_SCALARS[base],)
    parts = dims.rstrip("]").split(",")
    return (_DTYPES[base], len(parts), parts[-1].strip() == "::1")


def _matches(specs: tuple[tuple[Any, ...], ...], args: tuple[Any, ...]) -> bool:
    """Whether ``args`` are exactly of the listed types (what numba's JIT would type them as;
    a Python ``bool`` is no ``int64``)."""
    if len(args) != len(specs):
        return False
    for s, a in zip(specs, args, strict=True):
        if len(s) == 1:
            if not isinstance(a, s[0]) or (s[0][0] is int and isinstance(a, bool)):
                return False
        elif not (
            type(a) is np.ndarray
            and a.dtype == s[0]
            and a.ndim == s[1]
            and a.flags.writeable
            and a.flags.aligned
            and (a.flags.c_contiguous or not s[2])
        ):
            return False
    return True


class Kernel:
    """A numba function of a module that may run from the module's ahead-of-time extension.
    Calling it checks the arguments against :data:`EXPORTS` and runs the extension's code,
    or numba's JIT dispatcher where the kernel is not exported, the types differ or there is
    no extension."""

    __slots__ = ("_aot", "_jit", "_specs", "_tried", "module", "name", "options", "py_func")

    def __init__(self, py_func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func = py_func
        self.options = options
        self.module: str = py_func.__module__
        self.name: str = py_func.__name__
        self._aot: Callable[..., Any] | None = None
        self._jit: Any = None
        self._tried = False
        args = EXPORTS.get(self.module, {}).get(self.name)
        self._specs = None if args is None else tuple(_spec(a) for a in args)
        _KERNELS.setdefault(self.module, {})[self.name] = self

    def _load(self) -> None:
        self._tried = True
        if self._specs is not None:
            ext = _extension(self.module)
            self._aot = None if ext is None else getattr(ext, self.name, None)

    def __call__(self, *args: Any) -> Any:
        if not self._tried:
            self._load()
        if self._aot is not None and _matches(self._specs or (), args):
            return self._aot(*args)
        return self.jit(*args)

    def entry(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        """The function to call with arguments of the types of ``args`` without a check: the
        extension's if they match, else numba's compiled entry point for them (the dispatcher
        itself if there is none yet)."""
        if not self._tried:
            self._load()
        if self._aot is not None and _matches(self._specs or (), args):
            return self._aot
        fn = self.jit
        try:
            sig = tuple(fn.typeof_pyval(a) for a in args)
            return cast(Callable[..., Any], fn.overloads[sig].entry_point)
        except (AttributeError, KeyError):
            return cast(Callable[..., Any], fn)

    @property
    def jit(self) -> Any:
        """numba's dispatcher of this kernel (numba imported and the module's kernels made
        dispatchers on first use, so that they call each other compiled)."""
        if self._jit is None:
            _jit_module(self.module)
        return self._jit


def njit(**options: Any) -> Callable[[F], F]:
    """``numba.njit(**options)`` whose kernels may run from an ahead-of-time extension
    (:class:`Kernel`); the options are numba's (``cache``, ``error_model``)."""

    def wrap(fn: F) -> F:
        return cast(F, Kernel(fn, options))

    return wrap


def _jit_module(name: str) -> dict[str, Any]:
    """Every kernel of module ``name`` as a numba dispatcher, also in the module's globals
    (where the kernels look each other up when numba compiles them)."""
    import numba

    module = sys.modules[name]
    out: dict[str, Any] = {}
    for kname, k in _KERNELS.get(name, {}).items():
        if k._jit is None:
            k._jit = numba.njit(**k.options)(k.py_func)
        out[kname] = k._jit
        if k._aot is None:  # an exported kernel running ahead of time stays the kernel
            setattr(module, kname, k._jit)
    return out


def _numba_loaded() -> bool:
    return "numba" in sys.modules


def _enabled() -> bool:
    return os.environ.get("CLUSTERLOOM_AOT", "1") != "0" and os.environ.get(
        "NUMBA_DISABLE_JIT", "0"
    ) in ("", "0")


def _machine() -> str:
    text = ""
    try:
        with open("/proc/cpuinfo") as f:
            seen = set()
            for line in f:
                key = line.partition(":")[0].strip()
                if key in ("model name", "flags") and key not in seen:
                    seen.add(key)
                    text += line
                if len(seen) == 2:
                    break
    except OSError:
        text = platform.processor()
    return f"{platform.machine()} {platform.system()} {text}"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = [sys.version, np.__version__]
    for dist in ("numba", "llvmlite"):
        try:
            out.append(version(dist))
        except PackageNotFoundError:
            out.append("-")
    return " ".join(out)


def digest(name: str) -> str:
    """The key of module ``name``'s extension (sources, versions, machine; see the module's
    docstring)."""
    src = Path(cast(str, sys.modules[name].__file__))
    h = hashlib.sha256()
    text = src.read_bytes()
    h.update(text)
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("clusterloom"):
            spec = importlib.util.find_spec(cast(str, node.module))
            if spec is not None and spec.origin:
                h.update(Path(spec.origin).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(repr(sorted(EXPORTS[name].items())).encode())
    h.update(_versions().encode())
    h.update(_machine().encode())
    return h.hexdigest()[:20]


def _dirs(name: str) -> list[Path]:
    src = Path(cast(str, sys.modules[name].__file__))
    out = [src.parent / "__pycache__"]
    if os.environ.get("CLUSTERLOOM_AOT_DIR"):
        out.insert(0, Path(os.environ["CLUSTERLOOM_AOT_DIR"]))
    out.append(Path.home() / ".cache" / "clusterloom" / "aot")
    return out


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK)


def _ext_name(name: str) -> str:
    return f"_aot_{name.rpartition('.')[2].strip('_')}_{digest(name)}"


def _extension(name: str) -> ModuleType | None:
    """Module ``name``'s extension: loaded from the cache, or built first (None: not
    available, the reason in :func:`status`)."""
    if name in _LOADED:
        return _LOADED[name]
    ext: ModuleType | None = None
    if not _enabled():
        _WHY[name] = "off (CLUSTERLOOM_AOT=0 or NUMBA_DISABLE_JIT=1)"
    else:
        ext_name = _ext_name(name)
        file = ext_name + cast(str, sysconfig.get_config_var("EXT_SUFFIX"))
        found = next((d / file for d in _dirs(name) if (d / file).exists()), None)
        where = None if found else next((d for d in _dirs(name) if _writable(d)), None)
        if found is None and where is None:
            _WHY[name] = "no writable cache directory"
        elif found is None and _numba_loaded():
            # numba is loaded already (a flow run's kernels): building would save nothing here
            # and cost the build; the first process that runs without numba builds it
            _WHY[name] = "numba's JIT (numba already loaded; the extension is not built yet)"
        elif found is None and where is not None:
            with _locked(where / (ext_name + ".lock")):  # one build at a time, others wait
                failed = where / (ext_name + ".failed")
                if (where / file).exists():
                    found = where / file
                elif failed.exists():
                    _WHY[name] = f"its build failed before ({failed})"
                elif _build_in_child(name, ext_name, where):
                    found = where / file
                    _prune(where, ext_name)
                else:
                    _WHY[name] = f"its build failed ({failed})"
        if found is not None:
            ext = _import(ext_name, found)
            _WHY[name] = f"compiled ahead of time ({found})"
    _LOADED[name] = ext
    return ext


def _prune(where: Path, keep: str) -> None:
    """Remove the module's extensions (and their markers) of other digests from ``where``."""
    stem = keep.rpartition("_")[0] + "_"
    for old in where.glob(stem + "*"):
        if not old.name.startswith(keep) and old.name[len(stem) :].split(".")[0].isalnum():
            old.unlink(missing_ok=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` while the block runs (none where there is no ``fcntl``)."""
    with open(path, "a") as f:
        try:
            import fcntl
        except ImportError:  # not POSIX: concurrent builds each write their own file
            yield
            return
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _import(ext_name: str, path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(ext_name, str(path))
    spec = importlib.util.spec_from_file_location(ext_name, path, loader=loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _build_in_child(name: str, ext_name: str, where: Path) -> bool:
    """Build module ``name``'s extension in a child process (numba's memory is the child's);
    on failure write the reason next to where it would be."""
    env = dict(os.environ, CLUSTERLOOM_AOT="0")
    cmd = [sys.executable, "-m", "clusterloom.sim._aot", name, ext_name, str(where)]
    _log.info("building the kernels of %s ahead of time into %s (once)", name, where)
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
        ok, why = done.returncode == 0, done.stderr[-4000:]
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why = False, repr(e)
    if not ok:
        from clusterloom.atomic import atomic_write

        _log.info("the build of %s failed: its kernels run under numba's JIT", name)
        atomic_write(where / (ext_name + ".failed"), why or "failed\n")
    return ok


def build(name: str, ext_name: str, where: Path) -> Path:
    """Compile module ``name``'s exported kernels into ``where/ext_name`` + the extension
    suffix with ``numba.pycc`` (in this process; it imports numba) and return the file."""
    import importlib

    ncc: Any = importlib.import_module("numba.core.compiler")
    pcc: Any = importlib.import_module("numba.pycc.compiler")
    sigutils: Any = importlib.import_module("numba.core.sigutils")
    cc_class: Any = importlib.import_module("numba.pycc").CC

    importlib.import_module(name)
    kernels = _jit_module(name)
    models = {_KERNELS[name][k].options.get("error_model", "python") for k in EXPORTS[name]}
    if len(models) != 1:
        raise ValueError(f"{name}: exported kernels with different error models {models}")
    model = models.pop()

    class _Flags(ncc.Flags):  # type: ignore[misc]  # numba's, untyped
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.error_model = model

    pcc.Flags = _Flags  # pycc makes its flags from this name; the JIT's error model
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        cc = cc_class(ext_name)
        cc.output_dir = tmp
        cc.target_cpu = "host"
        for kname, args in EXPORTS[name].items():
            disp = kernels[kname]
            argtys, _ = sigutils.normalize_signature(f"({', '.join(args)},)")
            disp.compile(argtys)
            cc.export(kname, disp.overloads[argtys].signature)(disp.py_func)
        cc.compile()
        built = Path(tmp) / str(cc.output_file)
        out = where / built.name
        os.replace(built, out)
    return out


def load(name: str) -> bool:
    """Load (building it first if needed) the extension of the imported module ``name``;
    whether its exported kernels now run compiled ahead of time."""
    for k in _KERNELS.get(name, {}).values():
        if not k._tried:
            k._load()
    return _LOADED.get(name) is not None


def status() -> dict[str, str]:
    """For each module with exported kernels that has run one: how its kernels run."""
    return dict(_WHY)


if __name__ == "__main__":  # the child of _build_in_child: module, extension name, directory
    # the kernels register with the imported module, not with this ``__main__`` copy of it
    import importlib

    importlib.import_module(__spec__.name).build(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
