"""Exact checks in front of the MCP server's streamable HTTP transport.

Host and Origin. The SDK compares these headers by string prefix, so `Host:
localhost:18765.evil.com` passes an allowed `localhost:*` and `Origin: http://localhost:1@evil.com`
passes `http://localhost:*`. Here each header is parsed first (scheme, host, port; nothing else
allowed: no user info, no path) and then compared exactly: the host name (case-insensitive), the
scheme, and the port, where a pattern's `:*` means "any port number" and no port means none.

JSON-RPC ids. A request whose `id` is not a string or an integer is not a request to the SDK,
which then takes it for a notification and answers 202 with nothing. JSON-RPC 2.0 allows any
number as an id and says a response must follow, so: an integral number (`7.0`) is passed on as
the integer it is, and an id that is an object, array, boolean, null or a fractional number gets
a JSON-RPC error (Invalid Request, 400) instead of silence.

Nesting. A body nested deeper than `tuning.MCP_JSON_MAX_DEPTH` (arrays and objects) is answered
with a JSON-RPC parse error (400) before anything parses it: the scan counts brackets outside
strings without recursion, where Python's json module would raise RecursionError (a 500).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_pipeline import tuning

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"(?P<host>\[[0-9A-Fa-f:.]+\]|{_LABEL}(?:\.{_LABEL})*\.?)"
_PORT = r"(?::(?P<port>[0-9]{1,5}))?"
_HOST_HEADER = re.compile(rf"{_HOST}{_PORT}")
_ORIGIN_HEADER = re.compile(rf"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://{_HOST}{_PORT}")
ANY_PORT = "*"
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
# A JSON string (escapes included; an unterminated one is left to the parser) or a bracket.
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_OPENERS = frozenset(b"[{")


def nested_deeper_than(body: bytes, limit: int) -> bool:
    """Whether the arrays and objects of a JSON text nest more than `limit` levels, found by
    counting brackets outside strings (no recursion, linear in the body)."""
    depth = 0
    for match in _JSON_TOKEN.finditer(body):
        first = match.group()[0]
        if first in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif first != 0x22:  # a closing bracket
            depth = max(depth - 1, 0)
    return False


def parse_host(value: str) -> tuple[str, int | None] | None:
    """(host, port) of a Host header value, or None when it is not exactly host[:port]."""
    match = _HOST_HEADER.fullmatch(value.strip())
    return _host_port(match) if match else None


def parse_origin(value: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of an Origin header value, or None when it is not exactly that."""
    match = _ORIGIN_HEADER.fullmatch(value.strip())
    if not match:
        return None
    host_port = _host_port(match)
    if host_port is None:
        return None
    return (match.group("scheme").lower(), *host_port)


def _host_port(match: re.Match[str]) -> tuple[str, int | None] | None:
    host = match.group("host").lower().rstrip(".")
    port = match.group("port")
    if port is None:
        return host, None
    number = int(port)
    return (host, number) if 1 <= number <= 65535 else None


@dataclass(frozen=True)
class HostPolicy:
    """Allowed (host, port) and (scheme, host, port) pairs; port ANY_PORT or None (no port)."""

    hosts: frozenset[tuple[str, object]]
    origins: frozenset[tuple[str, str, object]]

    @classmethod
    def from_patterns(cls, hosts: Iterable[str], origins: Iterable[str]) -> HostPolicy:
        """From the SDK's pattern lists (`name`, `name:*`, `scheme://name`, `scheme://name:*`)."""
        host_set: set[tuple[str, object]] = set()
        for pattern in hosts:
            base, port = _split_any(pattern)
            parsed = parse_host(base)
            if parsed is None or parsed[1] is not None:
                raise ValueError(f"not a host pattern: {pattern!r}")
            host_set.add((parsed[0], port))
        origin_set: set[tuple[str, str, object]] = set()
        for pattern in origins:
            base, port = _split_any(pattern)
            parsed_origin = parse_origin(base)
            if parsed_origin is None or parsed_origin[2] is not None:
                raise ValueError(f"not an origin pattern: {pattern!r}")
            origin_set.add((parsed_origin[0], parsed_origin[1], port))
        return cls(frozenset(host_set), frozenset(origin_set))

    def host_allowed(self, value: str | None) -> bool:
        parsed = parse_host(value) if value else None
        if parsed is None:
            return False
        host, port = parsed
        return (host, ANY_PORT if port is not None else None) in self.hosts

    def origin_allowed(self, value: str | None) -> bool:
        if value is None:
            return True  # absent for same-origin and non-browser clients
        parsed = parse_origin(value)
        if parsed is None:
            return False
        scheme, host, port = parsed
        return (scheme, host, ANY_PORT if port is not None else None) in self.origins


def _split_any(pattern: str) -> tuple[str, object]:
    return (pattern[:-2], ANY_PORT) if pattern.endswith(":*") else (pattern, None)


class HeaderGuard:
    """ASGI middleware: 421 for a Host, 403 for an Origin the policy does not allow."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = _headers(scope)
            if not self.policy.host_allowed(headers.get("host")):
                await _plain(send, 421, b"Invalid Host header")
                return
            if not self.policy.origin_allowed(headers.get("origin")):
                await _plain(send, 403, b"Invalid Origin header")
                return
        await self.app(scope, receive, send)


class JsonRpcIdGuard:
    """ASGI middleware for POSTs of one JSON-RPC message: every request id gets an answer."""

    def __init__(self, app: ASGIApp, max_body: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, complete, rest = await _read_body(receive, self.max_body)
        if complete:
            verdict = _judge(body)
            if isinstance(verdict, dict):  # an error to answer
                await _json(send, 400, verdict)
                return
            if isinstance(verdict, bytes):
                body = verdict  # the same message, its id an integer
        await self.app(scope, _replay(body, complete, rest, receive), send)


def _judge(body: bytes) -> dict[str, Any] | bytes | None:
    """None: pass on as is; bytes: pass on this body instead; dict: answer this error."""
    limit = tuning.MCP_JSON_MAX_DEPTH
    if nested_deeper_than(body, limit):
        return _error(None, f"the JSON is nested deeper than {limit} levels", PARSE_ERROR)
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers the parse error
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    request_id = message["id"]
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return None
    if isinstance(request_id, float) and request_id.is_integer():
        message["id"] = int(request_id)
        return json.dumps(message).encode()
    if isinstance(request_id, float):
        return _error(request_id, "a fractional id is not supported; use an integer or a string")
    return _error(None, "the id must be a string or a number")


def _error(request_id: object, why: str, code: int = INVALID_REQUEST) -> dict[str, Any]:
    kind = "Parse error" if code == PARSE_ERROR else "Invalid Request"
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": f"{kind}: {why}"},
    }


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool, list[Message]]:
    """The request body (up to `limit` bytes), whether it is complete, and messages read past it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False, [message]
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True, []
        if size > limit:  # too large to judge: pass it on untouched (the SDK answers 413)
            return b"".join(chunks), False, []


def _replay(body: bytes, complete: bool, rest: list[Message], receive: Receive) -> Receive:
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": not complete}]
    pending += rest

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = name.decode("latin-1").lower()
        if key in ("host", "origin") and key in out:
            out[key] = "\x00duplicate"  # two Host or Origin headers: never allowed
            continue
        out[key] = value.decode("latin-1")
    return out


async def _plain(send: Send, status: int, body: bytes) -> None:
    await _send(send, status, body, b"text/plain; charset=utf-8")


async def _json(send: Send, status: int, payload: dict[str, Any]) -> None:
    await _send(send, status, json.dumps(payload).encode(), b"application/json")


async def _send(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
