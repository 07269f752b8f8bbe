"""Drives `lurkbot mcp serve` with the official MCP SDK's client and prints what it saw as JSON.

Usage: serve_client.py LURKBOT HOME CALLS_JSON — CALLS_JSON is a list of [tool, arguments].
"""
import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    lurkbot, home, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(command=lurkbot, args=["--home", home, "mcp", "serve"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            results = []
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                results.append({"tool": name, "isError": bool(result.is_error), "text": text})
            print(json.dumps({
                "server": init.server_info.name,
                "tools": [t.name for t in tools.tools],
                "results": results,
            }))


anyio.run(main)
