"""`memory-pipeline hook session-start|prompt`: the thin client the agent runs on every prompt.

It imports the standard library and `memory_pipeline.tuning` only (`python -X importtime`
shows why: the CLI's own imports take longer than the per-prompt deadline), reads the payload on
stdin, asks the resident hook server (`serving/hooks/server.py`) over its Unix socket, and prints
what the server answered, in the hook output format, if it arrives before the deadline.

It fails open, always: whatever goes wrong (no server yet, database down, schema older than the
code, no embedder, the deadline passed, a bad payload), it prints nothing, exits 0 and appends
one line to MEMORY_HOME/logs/hooks.log. When no server answers it starts one in the background:
a session start waits for it up to HOOK_SESSION_COLD_DEADLINE_S, a prompt does not (that prompt
gets nothing).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from memory_pipeline import tuning
from serving.hooks import payload

USAGE = (
    "usage: memory-pipeline hook session-start|prompt [--deadline SECONDS] [--tokens N]"
    " [--agent claude-code|codex|cursor]\n"
    "  reads the agent's hook JSON on stdin; prints context to add, or nothing"
)
DEADLINES = {
    payload.SESSION_START: tuning.HOOK_SESSION_DEADLINE_S,
    payload.USER_PROMPT_SUBMIT: tuning.HOOK_PROMPT_DEADLINE_S,
}
_SPAWN_GRACE_S = 60.0  # another client's server start is trusted to be under way this long
_SOCKET_PATH_MAX = 100  # AF_UNIX paths hold 104-108 bytes depending on the system


class DeadlineExceeded(Exception):
    """The deadline passed before the server's answer arrived."""


def memory_home() -> str:
    """MEMORY_HOME as `memory_pipeline.settings` resolves it (a test keeps the two equal):
    importing the settings module costs more than the whole per-prompt deadline."""
    value = os.environ.get("MEMORY_HOME")
    if value:
        return os.path.expanduser(value)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = xdg or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "memory-pipeline")


def socket_path(home: str | os.PathLike[str]) -> str:
    """MEMORY_HOME/hook.sock, or a per-home name in the temp directory when that is too long
    for a Unix socket address."""
    path = os.path.join(home, "hook.sock")
    if len(path.encode()) <= _SOCKET_PATH_MAX:
        return path
    import hashlib  # only on this rare path: each import costs the common one time
    import tempfile

    digest = hashlib.sha256(str(home).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"memory-pipeline-hook-{digest}.sock")


def log_line(home: str, message: str) -> None:
    """Append one line to MEMORY_HOME/logs/hooks.log (rotated once past HOOK_LOG_MAX_BYTES)."""
    try:
        logs = os.path.join(home, "logs")
        os.makedirs(logs, exist_ok=True)
        path = os.path.join(logs, "hooks.log")
        if os.path.exists(path) and os.path.getsize(path) > tuning.HOOK_LOG_MAX_BYTES:
            os.replace(path, os.path.join(logs, "hooks.log.1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{stamp} {' '.join(message.split())}\n")
    except OSError:
        pass  # failing open includes a log that cannot be written


def _parse_args(argv: list[str]) -> tuple[str, float | None, int | None, str | None]:
    if not argv or argv[0] not in payload.EVENTS:
        raise ValueError(f"unknown hook {argv[0] if argv else '(none)'}")
    deadline: float | None = None
    tokens: int | None = None
    agent: str | None = None
    rest = argv[1:]
    while rest:
        flag, value, rest = rest[0], rest[1] if len(rest) > 1 else "", rest[2:]
        if flag == "--deadline":
            deadline = float(value)
        elif flag == "--tokens":
            tokens = int(value)
        elif flag == "--agent" and value in payload.AGENTS:
            agent = value
        else:
            raise ValueError(f"unknown option {flag} {value}".strip())
    return payload.EVENTS[argv[0]], deadline, tokens, agent


def main(argv: list[str] | None = None) -> int:
    """The hook command. Always returns 0."""
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        print(USAGE)
        return 0
    home = memory_home()
    try:
        event_name, deadline, tokens, agent = _parse_args(argv)
    except ValueError as exc:
        log_line(home, f"hook: {exc}; {USAGE.splitlines()[0]}")
        return 0
    deadline_at = started + (deadline if deadline is not None else DEADLINES[event_name])
    # A session start that has to wait for the server to start waits longer (once per cold
    # start); an explicit --deadline holds either way.
    cold_at = started + (deadline if deadline is not None else tuning.HOOK_SESSION_COLD_DEADLINE_S)
    try:
        event = payload.parse(sys.stdin.buffer.read(), event_name)
        text = ask(home, event, tokens, deadline_at, cold_at)
    except DeadlineExceeded:
        log_line(home, f"{event_name}: deadline exceeded; nothing injected")
        return 0
    except Exception as exc:  # fail open: nothing printed, one line logged
        log_line(home, f"{event_name}: {type(exc).__name__}: {exc}")
        return 0
    if text:
        form = payload.CURSOR if agent == payload.CURSOR else event.form
        sys.stdout.write(payload.output(event.event, text, form))
        sys.stdout.flush()
    return 0


def ask(
    home: str,
    event: payload.HookEvent,
    tokens: int | None,
    deadline_at: float,
    cold_at: float | None = None,
) -> str | None:
    """The server's answer for `event`, or None (and one log line) when there is none in time.
    A session start that finds no server starts one and waits for it until `cold_at` (if
    later than `deadline_at`); a prompt does not wait."""
    if event.event == payload.USER_PROMPT_SUBMIT and not event.prompt.strip():
        return None  # an empty prompt asks nothing
    path = socket_path(home)
    sock = _connect(path, deadline_at)
    if sock is None:
        started = start_server(home, path)
        if event.event == payload.SESSION_START:
            deadline_at = max(deadline_at, cold_at or deadline_at)
            sock = _wait_for_server(path, deadline_at)
        if sock is None:
            what = "started it" if started else "it is starting"
            log_line(home, f"{event.event}: the hook server was not running ({what}); no memory")
            return None
    request = {
        "event": event.event,
        "prompt": event.prompt,
        "cwd": event.cwd,
        "source": event.source,
        "session_id": event.session_id,
        "tokens": tokens,
        "seconds": max(0.0, deadline_at - time.monotonic()),
    }
    with sock:
        try:
            sock.settimeout(max(0.001, deadline_at - time.monotonic()))
            sock.sendall(json.dumps(request).encode() + b"\n")
            reply = _read_line(sock)
        except TimeoutError:
            raise DeadlineExceeded from None
    if time.monotonic() > deadline_at:
        raise DeadlineExceeded
    answer = json.loads(reply)
    if answer.get("error"):
        log_line(home, f"{event.event}: {answer['error']}")
        return None
    text = answer.get("text")
    return text if isinstance(text, str) and text else None


def _connect(path: str, deadline_at: float) -> socket.socket | None:
    if time.monotonic() > deadline_at:
        raise DeadlineExceeded
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(max(0.001, deadline_at - time.monotonic()))
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except TimeoutError:
        sock.close()
        raise DeadlineExceeded from None
    except OSError:
        sock.close()
        raise
    return sock


def _wait_for_server(path: str, deadline_at: float) -> socket.socket | None:
    while time.monotonic() + 0.05 < deadline_at:
        time.sleep(0.05)
        sock = _connect(path, deadline_at)
        if sock is not None:
            return sock
    return None


def _read_line(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


def start_server(home: str, path: str) -> bool:
    """Start the hook server in the background unless another client just did; True if this
    call started it. Its output goes to MEMORY_HOME/logs/hook-server.log."""
    import subprocess  # only on this rare path: it costs a few milliseconds to import

    marker = os.path.join(home, "hook-server.starting")
    try:
        os.makedirs(os.path.join(home, "logs"), exist_ok=True)
        if os.path.exists(marker) and time.time() - os.path.getmtime(marker) < _SPAWN_GRACE_S:
            return False
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        with open(os.path.join(home, "logs", "hook-server.log"), "ab") as log:
            subprocess.Popen(
                [sys.executable, "-m", "serving.hooks.server", "--socket", path],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
    except OSError as exc:
        log_line(home, f"cannot start the hook server: {exc}")
        return False
    return True


INSTALLED_MARKER = "hooks-installed"  # MEMORY_HOME/...: `hooks install` ran for some agent


def ensure_server(home: str) -> str:
    """Start the hook server in the background unless one answers already (so the next
    session start finds it warm): `hooks install` and the end of `memory-pipeline run` call it.
    Returns what it did, for one line of output."""
    path = socket_path(home)
    sock = _connect(path, time.monotonic() + 1.0)
    if sock is not None:
        sock.close()
        return "already running"
    return "starting" if start_server(home, path) else "already starting"


if __name__ == "__main__":
    raise SystemExit(main())
