"""`python -m serving.mcp`: the MCP server without the rest of the CLI."""

from serving.mcp.run import main

main()
