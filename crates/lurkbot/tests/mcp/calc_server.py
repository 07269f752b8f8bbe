"""A small MCP server on the official Python SDK, for LurkBot's MCP client tests.

stdio by default; `--http PORT` serves streamable HTTP on 127.0.0.1:PORT/mcp.
"""
import os
import sys
import time

from mcp.server.mcpserver import MCPServer

app = MCPServer("calc")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stderr.write("calc: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"


@app.tool()
def env() -> str:
    """What the server's environment holds."""
    token = os.environ.get("CALC_TOKEN", "<unset>")
    leaked = "OPENAI_API_KEY" in os.environ
    return f"token={token} openai_key_visible={leaked}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import anyio

        anyio.run(lambda: app.run_streamable_http_async(host="127.0.0.1", port=int(sys.argv[2])))
    else:
        app.run("stdio")
