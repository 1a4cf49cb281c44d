"""The MCP server: read-only memory tools for coding agents, over stdio or streamable HTTP.

Seven tools, every one read-only (`readOnlyHint: true`, `openWorldHint: false`): search, context
pack, read one memory, list, relationship graph, timeline, the daily briefing. Each returns
structured content (a pydantic model, published as the tool's output schema) and readable text
in which every memory sits inside <memory ...> ... </memory> delimiters with its provenance,
cleaned of control and zero-width characters (`serving/render.py`).

The server connects as the read-only role `memory_reader` (SELECT on memory tables, INSERT on
retrieval_events only) through a small connection pool opened on first use. Expected failures
(unknown id, bad cursor, empty query, database unavailable) are `ToolError`s with a message the
model can act on; anything else reaches the client as the SDK's generic "Error executing tool",
so DSNs and SQL never leave the process.

Streamable HTTP binds 127.0.0.1 by default, requires a bearer token (generated on first use into
`MEMORY_HOME/mcp-token`, mode 0600) and always checks Host and Origin; a non-local bind needs
`allow_remote` and the host names clients will use, and keeps both checks.

Modules: `schema` (bounds, input and output types), `pool` (the read-only connection pool),
`tools` (the seven tools), `auth` (the HTTP bearer token), `http_guard` and `http` (streamable
HTTP), `run` (`memory-pipeline mcp` and `python -m serving.mcp`, which serves stdio).
"""
