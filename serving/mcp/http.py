"""Streamable HTTP: Host/Origin checks, the bearer token in front of /mcp, and uvicorn."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from memory_pipeline import tuning
from memory_pipeline.errors import UserError
from serving.mcp.auth import load_or_create_token, token_path
from serving.mcp.http_guard import HeaderGuard, HostPolicy, JsonRpcIdGuard, parse_host
from serving.mcp.tools import build_server
from serving.mcp.workers import worker_count

DEFAULT_HTTP_PORT = 8765
MCP_PATH = "/mcp"


_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host in _LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(
    host: str, allow_remote: bool = False, allowed_hosts: list[str] | tuple[str, ...] = ()
) -> TransportSecuritySettings:
    """Host and Origin checks for streamable HTTP: always on, local names plus those given."""
    if not is_loopback(host):
        if not allow_remote:
            raise UserError(
                f"binding to {host} makes the memory server reachable from other machines; "
                "pass --allow-remote and --allowed-host <name clients use> to do it on purpose"
            )
        if not allowed_hosts:
            raise UserError(
                "--allow-remote needs at least one --allowed-host: the host name (or IP) "
                "clients put in the Host header"
            )
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    for name in allowed_hosts:
        parsed = parse_host(name)
        if parsed is None or parsed[1] is not None:
            raise UserError(f"--allowed-host {name!r} is not a host name or IP address")
        hosts += [name, f"{name}:*"]
        origins += [
            f"{scheme}://{name}{port}" for scheme in ("http", "https") for port in ("", ":*")
        ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def http_app(
    server: MCPServer,
    host: str = "127.0.0.1",
    allow_remote: bool = False,
    allowed_hosts: list[str] | tuple[str, ...] = (),
) -> Any:
    """The streamable HTTP ASGI app at /mcp, with exact Host/Origin checks in front of it.

    serving/mcp/http_guard.py parses both headers and compares scheme, host and port exactly (the
    SDK's own check, kept behind it, compares prefixes), and answers a JSON-RPC request whose id
    the SDK cannot take with a JSON-RPC error instead of a silent 202.
    """
    security = transport_security(host, allow_remote, allowed_hosts)
    # JSON responses: the tools send no notifications, so each call is answered with one JSON
    # body rather than an SSE stream (no per-request task group and stream in the server).
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        host=host,
        json_response=tuning.MCP_JSON_RESPONSE,
    )
    _guard_request_ids(app)
    policy = HostPolicy.from_patterns(security.allowed_hosts, security.allowed_origins)
    return HeaderGuard(app, policy)


def _guard_request_ids(app: Any) -> None:
    """Put JsonRpcIdGuard between the bearer-token check and the MCP endpoint."""
    for route in app.routes:
        if getattr(route, "path", None) != MCP_PATH:
            continue
        endpoint = route.app
        if isinstance(endpoint, RequireAuthMiddleware):
            endpoint.app = JsonRpcIdGuard(endpoint.app)
        else:
            route.app = JsonRpcIdGuard(endpoint)
        return
    raise RuntimeError(f"the MCP SDK's HTTP app has no route {MCP_PATH}")


def run_http(
    host: str = "127.0.0.1",
    port: int = DEFAULT_HTTP_PORT,
    allow_remote: bool = False,
    allowed_hosts: list[str] | tuple[str, ...] = (),
    reader_url: str | None = None,
    memory_home: Path | None = None,
    include_private: bool = False,
) -> None:
    """Serve streamable HTTP at http://<host>:<port>/mcp, bearer token required. Private-tier
    memories are served only with `include_private` (`mcp --include-private`)."""
    import uvicorn

    transport_security(host, allow_remote, allowed_hosts)  # refuse a bad bind before anything
    token = load_or_create_token(memory_home)
    workers = worker_count()
    if workers == 0:
        # The calls run in threads of this process, several at once: BLAS threads of their own
        # would only spin against each other (and PostgreSQL) on the same cores.
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
    server = build_server(reader_url, token=token, include_private=include_private, workers=workers)
    app = http_app(server, host, allow_remote, allowed_hosts)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"memory MCP server: http://{shown}:{port}{MCP_PATH}\n"
        f"bearer token: {token_path(memory_home)} (send `Authorization: Bearer <token>`)",
        file=sys.stderr,
    )
    uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="info",
            server_header=False,
            timeout_keep_alive=tuning.MCP_HTTP_KEEP_ALIVE_S,
        )
    ).run()


if __name__ == "__main__":
    pass
