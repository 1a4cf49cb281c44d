"""Starting the MCP server: `memory-pipeline mcp` calls `mcp_command`; `python -m serving.mcp`
parses the same options itself."""

from __future__ import annotations

import argparse
import sys

from memory_pipeline.errors import UserError

TRANSPORTS = ("stdio", "http")


def mcp_command(
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_remote: bool = False,
    allowed_hosts: list[str] | None = None,
    include_private: bool = False,
) -> None:
    """Serve the read-only memory tools until the client disconnects or Ctrl-C.

    stdio is what Claude Code and Codex launch. http serves streamable HTTP at
    http://<host>:<port>/mcp with a bearer token from MEMORY_HOME/mcp-token; a host other than
    loopback needs `allow_remote` and the host names clients use (`allowed_hosts`).
    """
    from serving.mcp.http import run_http, transport_security

    if transport not in TRANSPORTS:
        raise UserError(f"unknown transport {transport!r}; use stdio or http")
    if not 1 <= port <= 65535:
        raise UserError(f"port {port} is out of range (1-65535)")
    if transport == "stdio":
        run_stdio(include_private=include_private)
        return
    transport_security(host, allow_remote, allowed_hosts or [])  # refuse a bad bind early
    try:
        run_http(
            host=host,
            port=port,
            allow_remote=allow_remote,
            allowed_hosts=allowed_hosts or [],
            include_private=include_private,
        )
    except KeyboardInterrupt:
        pass


def run_stdio(reader_url: str | None = None, include_private: bool = False) -> None:
    """Serve over stdin/stdout until the client closes them (Claude Code, Codex)."""
    from serving.mcp.tools import build_server

    build_server(reader_url, include_private=include_private).run("stdio")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m serving.mcp", description="The read-only memory MCP server."
    )
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only; keep it local.")
    parser.add_argument("--port", type=int, default=8765, help="HTTP only.")
    parser.add_argument(
        "--allow-remote", action="store_true", help="HTTP only: allow a non-loopback --host."
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        dest="allowed_hosts",
        help="HTTP only: a Host name clients use (repeatable); required with --allow-remote.",
    )
    parser.add_argument(
        "--include-private", action="store_true", help="Serve private-tier memories too."
    )
    args = parser.parse_args(argv)
    try:
        mcp_command(
            args.transport,
            args.host,
            args.port,
            args.allow_remote,
            args.allowed_hosts,
            args.include_private,
        )
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
