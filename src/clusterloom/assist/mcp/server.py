"""The MCP server over the tools of ``tools.py``, on the official ``mcp`` Python SDK (2.x).

It is built on the SDK's low-level ``Server`` rather than ``MCPServer``: ``MCPServer`` checks a
call's arguments against the function signature itself and answers a bad one with an error
text, while every clusterloom tool must answer it with findings naming the field. So the
server lists each tool with its input model's JSON Schema and its output model's, checks the
arguments with the same model (``tools.call_tool``) and returns the output as structured
content (and the same JSON as text, for clients that read only text).

A call runs in a worker thread, one at a time (the stages are CPU-bound and numba and OR-Tools
are not re-entrant across threads); its progress reaches the client as progress
notifications when the client asked for them. ``isError`` is set when the call could not be
carried out (a bad argument or input, a refused path, a bug); a design whose checks fail is a
result (``ok`` false, its findings), not an error. No language model runs here: the tools are
deterministic library calls, and the agent is the client.
"""

from __future__ import annotations

import json
import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from clusterloom._version import __version__
from clusterloom.assist.mcp.models import ToolOutput
from clusterloom.assist.mcp.root import Root
from clusterloom.assist.mcp.tools import REFUSED, TOOLS, Call, call_tool

__all__ = ["SERVER_NAME", "create_server", "run_http", "run_stdio"]

SERVER_NAME = "clusterloom"

_INSTRUCTIONS = (
    "clusterloom designs the networks of AI training clusters from a cluster spec (YAML, "
    "docs/spec.md). Every tool returns ok, errors, warnings and findings (severity, code, "
    "message, where); ok false means a finding is an error and the design fields are null. "
    "Start with validate, then size, place, cable (output writes a run directory for diff and "
    "plan), simulate and diff; propose finds designs for a goal, plan a change from an "
    "installed run to a target spec. Paths are relative to the server's root."
)


def _tool(name: str) -> types.Tool:
    t = TOOLS[name]
    return types.Tool(
        name=t.name,
        title=t.title,
        description=t.description,
        input_schema=t.inputs.model_json_schema(),
        output_schema=t.outputs.model_json_schema(mode="serialization"),
        annotations=types.ToolAnnotations(
            title=t.title,
            read_only_hint=not t.writes,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


def _result(out: ToolOutput) -> types.CallToolResult:
    data = out.model_dump(mode="json", by_alias=True)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=data,
        is_error=any(f.code in REFUSED for f in out.findings),
    )


def create_server(root: str | Path | Root) -> Server[Any]:
    """The MCP server of clusterloom's tools, confined to ``root`` (a directory; ``SpecError``
    when it is not one). Serve it with :func:`run_stdio` or :func:`run_http`, or connect to it
    in-process with ``mcp.Client(server)``."""
    confined = root if isinstance(root, Root) else Root(root)
    one_at_a_time = threading.Lock()
    listed = types.ListToolsResult(tools=[_tool(name) for name in TOOLS])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = ctx.session

        def report(done: float, total: float | None, message: str) -> None:
            anyio.from_thread.run(partial(session.report_progress, done, total, message))

        def work() -> ToolOutput:
            with one_at_a_time:
                return call_tool(params.name, params.arguments, Call(confined, report))

        return _result(await anyio.to_thread.run_sync(work))

    return Server(
        SERVER_NAME,
        version=__version__,
        title="clusterloom",
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on stdin and stdout until the client closes them (what MCP clients
    launch)."""
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


def run_http(server: Server[Any], host: str, port: int) -> None:
    """Serve ``server`` on the SDK's streamable HTTP transport at ``http://HOST:PORT/mcp``
    (on a loopback address the SDK also refuses requests whose Host or Origin header is not
    loopback, against DNS rebinding)."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
