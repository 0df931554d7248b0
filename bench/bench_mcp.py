"""The MCP server's tools on a built-in example (default hgx-1k-roce: 1,024 GPUs, one hall):
each tool called through the SDK's in-process client (one session) and directly (``call_tool``, no
protocol), median and best of ``--repeat`` calls after one warm-up call, and the bytes of its
structured output; then the time from launching ``clusterloom mcp`` over stdio to its tool
list (what a client waits for at start-up).

Run: ``python -u bench/bench_mcp.py [EXAMPLE] [--repeat N]``; figures go to
``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from clusterloom.assist.mcp import Call, Root, call_tool
from clusterloom.assist.mcp.server import create_server
from clusterloom.examples import example_text


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    out = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("example", nargs="?", default="hgx-1k-roce")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    server = create_server(root)
    spec = {"example": args.example}
    call_tool("cable", {**spec, "output": "run"}, Call(Root(root)))
    cases: list[tuple[str, dict[str, Any]]] = [
        ("validate", spec),
        ("size", spec),
        ("place", spec),
        ("cable", spec),
        ("simulate", {**spec, "size": "256KB"}),
        ("diff", {"a": {"path": "run"}, "b": {"spec": example_text(args.example)}}),
    ]
    print(f"{args.example}: median / best of {args.repeat} calls, seconds")
    print("| tool | through the client | direct | structured output |")
    print("|---|---|---|---|")
    for name, arguments in cases:

        async def through(name: str = name, arguments: dict[str, Any] = arguments) -> Any:
            async with Client(server) as client:  # one session, as a client keeps it
                await client.list_tools()
                await client.call_tool(name, arguments)  # warm-up
                times = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    times.append(time.perf_counter() - start)
                return statistics.median(times), min(times), result

        def direct(name: str = name, arguments: dict[str, Any] = arguments) -> Any:
            return call_tool(name, arguments, Call(Root(root)))

        med, best, result = anyio.run(through)
        dmed, dbest, _ = _timed(direct, args.repeat)
        size = len(json.dumps(result.structured_content, separators=(",", ":")))
        ok = result.structured_content["ok"]
        print(
            f"| {name} | {med:.3f} / {best:.3f} | {dmed:.3f} / {dbest:.3f} | {size:,} B, ok {ok} |"
        )

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "clusterloom.cli.main", "mcp", "--root", str(root)],
        env=env,
    )

    async def listed() -> int:
        async with Client(params) as client:
            return len((await client.list_tools()).tools)

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    med, best, n = _timed(lambda: anyio.run(listed), args.repeat)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / (args.repeat + 1)
    print(
        f"stdio: launch to a list of {n} tools: {med:.2f} s median, {best:.2f} s best; "
        f"{cpu:.2f} s of CPU per launch (server process)"
    )


if __name__ == "__main__":
    main()
