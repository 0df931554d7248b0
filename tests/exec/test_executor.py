"""The executor interface: keys, the local pool and serial mode, retries, Ray addresses."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pyarrow as pa
import pytest

from clusterloom.errors import SpecError
from clusterloom.exec import LocalExecutor, Task, open_executor, task_key
from clusterloom.exec.task import call, from_ipc

FN = f"{__name__}:square"


def square(inputs: dict[str, object]) -> pa.Table:
    x = int(inputs["x"])  # type: ignore[call-overload]
    if inputs.get("fail"):
        raise ValueError(f"refusing {x}")
    return pa.table({"x": [x], "y": [x * x], "pid": [os.getpid()]})


def flaky(inputs: dict[str, object]) -> pa.Table:
    """Fails until it has been called ``times`` times (counted in a file: across processes)."""
    marker = Path(str(inputs["marker"]))
    with marker.open("a") as fh:
        fh.write("x")
    if len(marker.read_text()) < int(inputs["times"]):  # type: ignore[call-overload]
        raise RuntimeError("not yet")
    return pa.table({"ok": [True]})


def test_the_key_is_canonical_json_of_function_inputs_and_version() -> None:
    a = task_key("m:f", {"a": 1, "b": [1, 2]})
    assert a == task_key("m:f", {"b": [1, 2], "a": 1})  # key order does not matter
    assert a != task_key("m:g", {"a": 1, "b": [1, 2]})
    assert a != task_key("m:f", {"a": 1, "b": [2, 1]})
    assert a != task_key("m:f", {"a": 1, "b": [1, 2]}, version="0.0.1")
    assert Task("m:f", {"a": 1, "b": [1, 2]}).key == a
    with pytest.raises(ValueError, match="module:function"):
        Task("nofunction", {})


def test_a_result_crosses_as_arrow_ipc_bytes() -> None:
    data = call(FN, {"x": 3})
    assert isinstance(data, bytes)
    assert from_ipc(data).column("y").to_pylist() == [9]


@pytest.mark.parametrize("workers", [1, 2])
def test_every_task_comes_back_once_with_its_own_result(workers: int) -> None:
    tasks = [Task(FN, {"x": i}) for i in range(7)]
    with LocalExecutor(workers) as ex:
        out = list(ex.run(tasks))
    assert sorted(o.task.key for o in out) == sorted(t.key for t in tasks)
    for o in out:
        assert o.ok and o.attempts == 1
        assert o.table.column("y").to_pylist() == [o.task.inputs["x"] ** 2]  # type: ignore[operator]
    pids = {o.table.column("pid")[0].as_py() for o in out}
    assert (pids == {os.getpid()}) == (workers == 1)  # serial runs here, a pool elsewhere


def test_a_task_that_raises_is_retried_then_reported_and_the_rest_finish() -> None:
    tasks = [Task(FN, {"x": i, "fail": i == 3}) for i in range(6)]
    with LocalExecutor(2) as ex:
        out = {o.task.inputs["x"]: o for o in ex.run(tasks, retries=2)}
    assert [x for x, o in out.items() if not o.ok] == [3]
    assert out[3].attempts == 3 and out[3].error == "ValueError: refusing 3"
    assert all(out[x].ok and out[x].attempts == 1 for x in out if x != 3)


def test_a_task_that_fails_twice_succeeds_on_its_third_attempt(tmp_path: Path) -> None:
    task = Task(f"{__name__}:flaky", {"marker": str(tmp_path / "m"), "times": 3})
    with LocalExecutor(2) as ex:
        (o,) = ex.run([task], retries=2)
    assert o.ok and o.attempts == 3
    with LocalExecutor(1) as ex:  # one retry is not enough for a task that needs 3 calls
        (o,) = ex.run([Task(task.fn, {"marker": str(tmp_path / "n"), "times": 3})], retries=1)
    assert not o.ok and o.attempts == 2 and o.error == "RuntimeError: not yet"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_ray_address_is_refused_before_anything_starts() -> None:
    port = _closed_port()
    with pytest.raises(SpecError) as info:
        open_executor(f"ray://127.0.0.1:{port}")
    (problem,) = info.value.problems
    assert problem.where == "--executor" and f"127.0.0.1:{port}" in problem.message
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()  # refused before Ray was asked to connect


def test_a_bad_executor_name_is_refused() -> None:
    with pytest.raises(SpecError, match="not an executor"):
        open_executor("kubernetes")
    with pytest.raises(SpecError, match="HOST:PORT"):
        open_executor("ray://nohost")
