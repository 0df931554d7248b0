"""The Ray executor: tasks as Ray remote calls on a local Ray or an existing cluster.

Where it runs, from ``address``:

- ``None`` (``--executor ray``): the cluster at ``RAY_ADDRESS`` when that is set (e.g. one
  started with ``ray start --head``), else a local Ray started here with ``workers`` CPUs (every
  CPU of the machine by default) and stopped again by :meth:`RayExecutor.close`;
- ``ray://HOST:PORT`` (``--executor ray://HOST:PORT``): an existing cluster through Ray Client
  (``pip install 'ray[client]'``).

An address is first checked with a plain TCP connection (3 s): one that does not answer is
refused with a ``SpecError`` naming it, before Ray is imported or anything is started. Workers
run :func:`clusterloom.exec.task.call` (one CPU each), so what comes back is Arrow IPC bytes.
A cluster started with ``ray start`` uses token authentication (Ray 2.5x on): its drivers need
``RAY_AUTH_MODE=token`` and the token (``~/.ray/auth_token`` on the same machine); a refused
connection says so. A local Ray's workers are given this process's ``clusterloom`` on their
``PYTHONPATH``, so a source tree that is not installed works too.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from clusterloom.errors import Problem, SpecError
from clusterloom.exec.executor import Executor, machine_workers
from clusterloom.exec.task import Task, call

__all__ = ["RayExecutor", "check_reachable"]

_CONNECT_TIMEOUT_S = 3.0


def _host_port(address: str) -> tuple[str, int] | None:
    """``HOST:PORT`` of ``ray://HOST:PORT`` or ``HOST:PORT``; None for ``auto``/``local``."""
    rest = address.removeprefix("ray://")
    if rest in ("auto", "local", ""):
        return None
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise SpecError(
            [Problem("--executor", f"'{address}' is not HOST:PORT; e.g. ray://10.0.0.1:10001")]
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def check_reachable(address: str, where: str = "--executor") -> None:
    """Refuse (``SpecError``, one problem naming ``where``) an address nothing listens on."""
    hp = _host_port(address)
    if hp is None:
        return
    try:
        with socket.create_connection(hp, timeout=_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise SpecError(
            [
                Problem(
                    where,
                    f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one "
                    "with 'ray start --head' or run with --executor local",
                )
            ]
        ) from None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SpecError(
            [Problem("--executor", "Ray is not installed; pip install 'clusterloom[ray]'")]
        ) from None
    return ray


class RayExecutor(Executor):
    """Tasks on Ray (module docstring)."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        given = address or os.environ.get("RAY_ADDRESS") or None
        if given is not None:
            check_reachable(given, "--executor" if address else "RAY_ADDRESS")
            if given.startswith("ray://"):
                try:
                    import grpc  # noqa: F401  (Ray Client needs it)
                except ImportError:
                    need = "ray:// needs Ray Client: pip install 'ray[client]'"
                    raise SpecError([Problem("--executor", need)]) from None
        ray = _ray()
        self._started = given is None
        source = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "runtime_env": {"env_vars": {"PYTHONPATH": path}},
        }
        if self._started:  # "local": a new Ray, never one a file in /tmp/ray points to
            options["address"] = "local"
            options["num_cpus"] = workers or machine_workers()
        else:
            options["address"] = given
        try:
            ray.init(**options)
        except Exception as exc:
            why = " ".join(str(exc).split())
            if not self._started and os.environ.get("RAY_AUTH_MODE") != "token":
                why += (
                    "; a cluster from 'ray start' wants its token: set RAY_AUTH_MODE=token "
                    "(the token is in ~/.ray/auth_token)"
                )
            problem = Problem("--executor", f"Ray did not start or connect: {why}")
            raise SpecError([problem]) from exc
        cpus = int(ray.cluster_resources().get("CPU", 1))
        super().__init__(max(1, cpus if workers is None else min(workers, cpus)))
        self._remote = ray.remote(num_cpus=1, max_retries=0)(call)
        self.address = given or "local"

    def describe(self) -> str:
        return f"ray at {self.address} ({self.workers} CPUs)"

    def _submit(self, task: Task) -> Any:
        return self._remote.remote(task.fn, dict(task.inputs))

    def _wait(self, handles: list[Any]) -> list[Any]:
        ray = _ray()
        ready, _ = ray.wait(handles, num_returns=1)
        more, _ = ray.wait(handles, num_returns=len(handles), timeout=0)
        seen = {id(r) for r in ready}
        return [*ready, *(r for r in more if id(r) not in seen)]

    def _result(self, handle: Any) -> bytes:
        ray = _ray()
        try:
            data: bytes = ray.get(handle)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, Exception) else exc
            raise cause from None
        return data

    def close(self) -> None:
        ray = _ray()
        if ray.is_initialized():
            ray.shutdown()
