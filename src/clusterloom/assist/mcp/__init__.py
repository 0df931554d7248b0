"""An MCP server for agents (issue 21): clusterloom's validate, size, place, cable, simulate,
diff, propose and plan as Model Context Protocol tools with typed inputs and structured
outputs that always carry the validators' findings (``docs/mcp.md``). ``tools`` holds the
tools as plain functions; ``server`` serves them on the ``mcp`` SDK (the ``[mcp]`` extra),
imported only when a server is built. No language model runs inside clusterloom."""

from clusterloom.assist.mcp.root import Root
from clusterloom.assist.mcp.tools import TOOLS, Call, Tool, call_tool

__all__ = ["TOOLS", "Call", "Root", "Tool", "call_tool"]
