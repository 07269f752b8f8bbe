"""An MCP server on the official Python SDK answering with the trace context its tool call
came with (`params._meta.traceparent`), for LurkBot's trace tests. stdio."""

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("traced")


@app.tool()
def whoami(ctx: Context) -> str:
    """Say which trace this call belongs to."""
    meta = ctx.request_context.meta or {}
    if not isinstance(meta, dict):
        meta = meta.model_dump()
    return f"traceparent={meta.get('traceparent')}"


if __name__ == "__main__":
    app.run("stdio")
