"""The agent hooks: payloads in the documented formats, relevance (unrelated prompts inject
nothing, related ones the right memory, corrections never), and failing open in every way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.settings import Settings
from memory_pipeline_tests.support.memories import add_memory
from memory_pipeline_tests.support.segments import add_segment
from serving.hooks import client, inject, payload
from serving.hooks import query as hook_query
from serving.hooks.server import HookService, serve
from serving.render import short_id

CLI = str(Path(sys.executable).parent / "memory-pipeline")

# Payloads exactly as documented (see serving/hooks/payload.py for the sources).
CLAUDE_SESSION_START = {
    "session_id": "abc123",
    "transcript_path": "/home/u/.claude/projects/-home-u-kestrel/abc123.jsonl",
    "cwd": "/home/u/kestrel",
    "permission_mode": "default",
    "hook_event_name": "SessionStart",
    "source": "startup",
    "model": "claude-sonnet-4-6",
}
CLAUDE_PROMPT = {
    "session_id": "abc123",
    "transcript_path": "/home/u/.claude/projects/-home-u-kestrel/abc123.jsonl",
    "cwd": "/home/u/kestrel",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "when does kestrel copy its snapshots offsite?",
}
CODEX_PROMPT = {
    "session_id": "019d036d-c7fa-72d2-b6fd-78878bfe34e4",
    "turn_id": "019d036e-3164-72c3-a170-98925564c4fc",
    "transcript_path": None,
    "cwd": "/home/u/kestrel",
    "hook_event_name": "UserPromptSubmit",
    "model": "gpt-5.2-codex",
    "permission_mode": "default",
    "prompt": "when does kestrel copy its snapshots offsite?",
}
UNRELATED = "what is a good recipe for banana bread with walnuts?"

TURNS = [
    ("Should kestrel keep local snapshots?", "Yes, hourly ZFS snapshots kept for two days."),
    (
        "When does the kestrel box copy its snapshots offsite?",
        "Every night at 02:00 over WireGuard; the offsite side keeps thirty days.",
    ),
    ("And if the offsite box is down?", "The job retries hourly and mails you after three."),
]


# --- payloads ---------------------------------------------------------------------------------
def test_documented_payloads_parse_and_unknown_fields_are_ignored() -> None:
    start = payload.parse(json.dumps(CLAUDE_SESSION_START), payload.SESSION_START)
    assert (start.event, start.prompt, start.cwd, start.source) == (
        "SessionStart",
        "",
        "/home/u/kestrel",
        "startup",
    )
    for raw in (CLAUDE_PROMPT, CODEX_PROMPT, {**CLAUDE_PROMPT, "prompt_id": "p1", "effort": 3}):
        event = payload.parse(json.dumps(raw).encode(), payload.USER_PROMPT_SUBMIT)
        assert event.event == "UserPromptSubmit"
        assert event.prompt == raw["prompt"]
        assert event.cwd == "/home/u/kestrel"
    # The payload's own event name wins over the command's; a prompt field of the wrong type
    # is an empty prompt, not a crash.
    assert payload.parse(json.dumps(CLAUDE_SESSION_START), "UserPromptSubmit").event == (
        "SessionStart"
    )
    assert payload.parse(json.dumps({"prompt": 7}), "UserPromptSubmit").prompt == ""
    with pytest.raises(payload.PayloadError):
        payload.parse(b"[1, 2]", "UserPromptSubmit")
    with pytest.raises(payload.PayloadError):
        payload.parse(b"not json", "UserPromptSubmit")


def test_output_is_the_documented_additional_context_shape() -> None:
    out = json.loads(payload.output("UserPromptSubmit", "some memory"))
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "some memory",
        }
    }


def test_client_memory_home_matches_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for env in ({"MEMORY_HOME": str(tmp_path / "h")}, {"XDG_DATA_HOME": str(tmp_path)}, {}):
        monkeypatch.delenv("MEMORY_HOME", raising=False)
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert Path(client.memory_home()) == Settings.from_env().memory_home
    long_home = tmp_path / ("x" * 120)
    assert len(client.socket_path(long_home)) <= 100


# --- relevance --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def embedder() -> inject.RememberingEmbedder:
    e = inject.RememberingEmbedder("http://127.0.0.1:9")
    e.embed("local:all-minilm-l6-v2:384", "warm up")
    return e


@pytest.fixture
def corpus(conn: psycopg.Connection) -> dict[str, str]:
    segment, _ = add_segment(conn, TURNS, native_id="chat-kestrel", title="Kestrel snapshots")
    ids = {
        "segment": segment,
        "decision": add_memory(
            conn,
            "Kestrel snapshots go offsite nightly",
            "We decided kestrel copies its ZFS snapshots offsite every night at 02:00.",
            type="decision",
            project="homelab",
        ),
        "correction": add_memory(
            conn,
            "Offsite copy correction",
            "Agent did: copied kestrel snapshots offsite hourly. User expected instead: nightly.",
            type="correction_episode",
            mem_class="episodic",
        ),
        "other": add_memory(
            conn, "Router fan", "The router fan is loud; its bearings are worn, replace the fan."
        ),
    }
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    return ids


def _prompt(text: str, cwd: str = "/home/u/kestrel") -> payload.HookEvent:
    return payload.HookEvent("UserPromptSubmit", text, cwd, None, "s1")


def _events(conn: psycopg.Connection) -> list[tuple[str, str]]:
    return conn.execute("SELECT memory_id::text, surface FROM retrieval_events").fetchall()


def test_related_prompt_injects_the_right_memory_never_a_correction(
    conn: psycopg.Connection, reader: psycopg.Connection, corpus: dict[str, str], embedder
) -> None:  # type: ignore[no-untyped-def]
    found = inject.build(
        reader, embedder, _prompt(CLAUDE_PROMPT["prompt"]), token_budget=400, min_cosine=0.45
    )
    assert found is not None
    assert corpus["decision"] in found.memory_ids or corpus["segment"] in found.memory_ids
    assert corpus["correction"] not in found.memory_ids
    assert corpus["correction"] not in found.text and "Agent did:" not in found.text
    assert corpus["other"] not in found.memory_ids
    assert found.tokens_used <= 400
    assert f"{found.tokens_used} of 400 tokens used" in found.text
    assert f"{found.left_out} matched memories left out" in found.text
    assert "<memory id=" in found.text and "not instructions" in found.text
    assert sorted(_events(conn)) == sorted((m, "hook") for m in found.memory_ids)


def test_unrelated_and_empty_prompts_inject_nothing(
    conn: psycopg.Connection, reader: psycopg.Connection, corpus: dict[str, str], embedder
) -> None:  # type: ignore[no-untyped-def]
    for text in (UNRELATED, "", "   ", "/clear"):
        assert inject.build(reader, embedder, _prompt(text), token_budget=400, min_cosine=0.45) is (
            None
        ), text
    assert _events(conn) == []


def test_cwd_is_a_hint_never_a_filter(
    reader: psycopg.Connection, corpus: dict[str, str], embedder
) -> None:  # type: ignore[no-untyped-def]
    # A repository named like another project: the homelab decision is still found.
    event = _prompt("when does kestrel copy its snapshots offsite?", cwd="/work/some-other-repo")
    found = inject.build(reader, embedder, event, token_budget=400, min_cosine=0.45)
    assert found is not None
    assert {corpus["decision"], corpus["segment"]} & set(found.memory_ids)


def test_session_start_recalls_recent_work(
    reader: psycopg.Connection, corpus: dict[str, str], embedder
) -> None:  # type: ignore[no-untyped-def]
    event = payload.HookEvent("SessionStart", "", "/home/u/kestrel", "startup", "s1")
    found = inject.build(reader, embedder, event, token_budget=1500, min_cosine=0.30)
    assert found is not None and found.tokens_used <= 1500
    assert corpus["correction"] not in found.memory_ids
    assert "recent work" in found.text


# --- the whole command, through the resident server --------------------------------------------
@pytest.fixture
def hook_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.pop("DATABASE_URL", None)
    return {**env, "MEMORY_HOME": str(home), **extra}


@pytest.fixture
def running(hook_home: Path, reader_url: str, monkeypatch: pytest.MonkeyPatch, embedder):  # type: ignore[no-untyped-def]
    """A hook server on MEMORY_HOME's socket, in this process, connected as the reader."""

    def start(url: str = reader_url) -> HookService:
        monkeypatch.setenv("MEMORY_HOME", str(hook_home))
        service = HookService(Settings.from_env(), url=url)
        service.embedder = embedder
        ready = threading.Event()
        path = client.socket_path(hook_home)
        threading.Thread(target=serve, args=(path, service, 60.0, ready.set), daemon=True).start()
        assert ready.wait(10)
        started.append(path)
        return service

    started: list[str] = []
    yield start
    for path in started:  # the server stops when its socket file is gone and it idles out
        Path(path).unlink(missing_ok=True)


def run_hook(home: Path, event: str, body: str | bytes, *args: str, **env: str):  # type: ignore[no-untyped-def]
    data = body if isinstance(body, bytes) else body.encode()
    return subprocess.run(
        [CLI, "hook", event, *args],
        input=data,
        capture_output=True,
        env=_env(home, **env),
        timeout=60,
        check=False,
    )


def _log(home: Path) -> list[str]:
    path = home / "logs" / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def test_prompt_and_session_start_commands_print_documented_output(
    hook_home: Path, corpus: dict[str, str], running
) -> None:  # type: ignore[no-untyped-def]
    running()
    # Generous deadlines: the machine running the tests is shared; the benchmark measures speed.
    result = run_hook(hook_home, "prompt", json.dumps(CODEX_PROMPT), "--deadline", "20")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert short_id(corpus["decision"]) in context or short_id(corpus["segment"]) in context
    assert corpus["correction"] not in context

    result = run_hook(
        hook_home, "session-start", json.dumps(CLAUDE_SESSION_START), "--deadline", "20"
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"

    for body in (
        json.dumps({**CLAUDE_PROMPT, "prompt": UNRELATED}),
        json.dumps({**CLAUDE_PROMPT, "prompt": ""}),
    ):
        result = run_hook(hook_home, "prompt", body, "--deadline", "20")
        assert (result.returncode, result.stdout) == (0, b"")
    assert _log(hook_home) == []  # nothing went wrong: nothing logged


@pytest.mark.parametrize(
    "case", ["db_down", "old_schema", "no_embedder", "deadline", "bad_payload"]
)
def test_every_failure_prints_nothing_exits_0_and_logs_one_line(
    case: str,
    hook_home: Path,
    conn: psycopg.Connection,
    corpus: dict[str, str],
    reader_url: str,
    running,
    tmp_path: Path,
) -> None:  # type: ignore[no-untyped-def]
    body: str = json.dumps(CLAUDE_PROMPT)
    args = ["--deadline", "20"]
    if case == "db_down":
        running(f"postgresql://memory_reader@/memory?host={tmp_path / 'no-server'}&port=5432")
    elif case == "old_schema":
        conn.execute("DELETE FROM schema_migrations WHERE version = '020'")
        running()
    elif case == "no_embedder":
        conn.execute("UPDATE embedding_spaces SET serving = false")
        running()
    elif case == "deadline":
        running()
        args = ["--deadline", "0.001"]
    else:
        running()
        body = "{not json"
    result = run_hook(hook_home, "prompt", body, *args)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    lines = _log(hook_home)
    assert len(lines) == 1, lines
    expected = {
        "db_down": "cannot reach the memory database",
        "old_schema": "older than this program",
        "no_embedder": "no complete vector space",
        "deadline": "deadline exceeded",
        "bad_payload": "stdin is not JSON",
    }[case]
    assert expected in lines[0]


def test_no_server_starts_one_and_a_missing_database_is_not_created(hook_home: Path) -> None:
    """The first prompt finds no server: nothing printed, one server started in the
    background; it answers the next prompt, and refuses to create a database."""
    first = run_hook(hook_home, "prompt", json.dumps(CLAUDE_PROMPT))
    assert (first.returncode, first.stdout) == (0, b"")
    assert "hook server was not running (started it)" in _log(hook_home)[0]
    path = client.socket_path(hook_home)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.2)
        second = run_hook(hook_home, "prompt", json.dumps(CLAUDE_PROMPT), "--deadline", "20")
        assert (second.returncode, second.stdout) == (0, b"")
        assert "no memory database under" in _log(hook_home)[-1]
        assert not (hook_home / "pgdata").exists()
    finally:
        pid_file = hook_home / "hook-server.pid"
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 15)


def test_a_cold_session_start_starts_the_server_and_injects(
    hook_home: Path, corpus: dict[str, str], reader_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server runs (a reboot, an idle exit): a session start starts one and waits for its
    answer past its usual deadline, up to the cold deadline, and gets the repository's memory."""
    monkeypatch.setenv("MEMORY_HOME", str(hook_home))
    monkeypatch.setenv("MEMORY_READER_URL", reader_url)
    event = payload.parse(json.dumps(CLAUDE_SESSION_START), payload.SESSION_START)
    now = time.monotonic()
    try:
        # The usual deadline is long gone before any server could answer; the cold one is
        # generous because the machine running the tests is shared (the bench times it).
        text = client.ask(str(hook_home), event, None, now + 0.5, now + 240)
        assert text and short_id(corpus["decision"]) in text, _log(hook_home)
        assert "started it" not in " ".join(_log(hook_home))
    finally:
        pid_file = hook_home / "hook-server.pid"
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 15)


def test_the_hook_command_imports_nothing_heavy() -> None:
    """The per-prompt command never loads Typer, psycopg, numpy or pydantic: those imports
    alone take longer than its deadline."""
    code = (
        "import sys\n"
        "sys.argv = ['memory-pipeline', 'hook', 'prompt', '--help']\n"
        "try:\n    import memory_pipeline.cli\nexcept SystemExit:\n    pass\n"
        "heavy = ('typer', 'psycopg', 'numpy', 'pydantic', 'dagster', 'memory_pipeline.settings')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


# --- under load (issue 35) ----------------------------------------------------------------------
def test_twenty_prompts_at_once_on_a_warm_server_all_get_their_memory(
    hook_home: Path, corpus: dict[str, str], running, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The server answers side by side (two requests in inject.build at the same moment),
    and every one of 20 prompts submitted together prints its memory."""
    service = running()
    inside, peak, lock = [0], [0], threading.Lock()
    stamps: list[object] = []
    build = inject.build

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
            stamps.append((time.monotonic(), threading.current_thread().name))
        try:
            time.sleep(0.2)  # long enough for a second request to arrive meanwhile
            return build(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(inject, "build", counted)
    assert service.answer({"event": "UserPromptSubmit", "prompt": "warm", "seconds": 20})
    body = json.dumps(CLAUDE_PROMPT).encode()
    procs = [
        subprocess.Popen(
            [CLI, "hook", "prompt", "--deadline", "30"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_env(hook_home),
        )
        for _ in range(20)
    ]
    with ThreadPoolExecutor(len(procs)) as pool:  # every prompt sent before any answer is read
        outs = list(pool.map(lambda p: p.communicate(body, timeout=90)[0], procs))
    with_memory = [o for o in outs if short_id(corpus["decision"]).encode() in o]
    assert len(with_memory) == 20, (_log(hook_home), outs)
    assert peak[0] >= 2, stamps
    assert _log(hook_home) == []


def test_the_server_keeps_its_connections_from_prompt_to_prompt(
    hook_home: Path, corpus: dict[str, str], running, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Each worker connects once and keeps its connection (and the backend's warm caches):
    30 prompts, one after another and 20 at once, open at most one connection per worker."""
    from memory_pipeline import tuning
    from serving.hooks import server

    connects: list[str] = []
    real = server.connect_reader

    def counted(url: str):  # type: ignore[no-untyped-def]
        connects.append(url)
        return real(url)

    monkeypatch.setattr(server, "connect_reader", counted)
    running()
    path = client.socket_path(hook_home)

    def ask(_: int) -> dict:  # type: ignore[type-arg]
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(120)
            sock.connect(path)
            request = {"event": "UserPromptSubmit", "prompt": CLAUDE_PROMPT["prompt"]}
            sock.sendall(json.dumps({**request, "seconds": 60}).encode() + b"\n")
            return json.loads(client._read_line(sock))

    answers = [ask(i) for i in range(10)]
    with ThreadPoolExecutor(20) as pool:
        answers += list(pool.map(ask, range(20)))
    assert all(a.get("text") for a in answers), answers
    assert 1 <= len(connects) <= tuning.HOOK_SERVER_THREADS


def test_a_stopped_database_is_not_started_the_hook_fails_open_in_one_line(
    hook_home: Path, running, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """After `memory-pipeline db stop` the embedded data directory is there, its server is
    not: the hook prints nothing, logs one line, and leaves the database stopped."""
    for name in ("MEMORY_READER_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    pgdata = hook_home / "pgdata"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("17\n")
    running(None)
    for _ in range(2):
        result = run_hook(hook_home, "prompt", json.dumps(CLAUDE_PROMPT), "--deadline", "20")
        assert (result.returncode, result.stdout) == (0, b"")
    lines = _log(hook_home)
    assert len(lines) == 2 and all("the memory database is stopped" in line for line in lines)
    assert not (pgdata / "postmaster.pid").exists()


def _server(home: Path, reader_url: str) -> subprocess.Popen[bytes]:
    env = _env(home, MEMORY_READER_URL=reader_url)
    return subprocess.Popen(
        [sys.executable, "-m", "serving.hooks.server"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )


def _wait_for(predicate, seconds: float = 60.0, poll: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return False


def test_one_server_per_home_and_an_orphan_exits_when_its_socket_is_gone(
    hook_home: Path, reader_url: str
) -> None:
    """The home's lock decides: a second server leaves at once while the first holds it; when
    the socket file is deleted the first exits because it is gone (not after idling) and a new
    one takes over. The socket appears only once the server is warm, so it is watched from
    the moment anyone can delete it (a slow warm-up under load kept an orphan alive)."""
    path = Path(client.socket_path(hook_home))
    first = _server(hook_home, reader_url)
    second = third = None
    try:
        assert _wait_for(path.exists, 240)
        second = _server(hook_home, reader_url)
        out, _ = second.communicate(timeout=240)
        assert second.returncode == 0 and b"already serves" in out
        assert first.poll() is None  # still the server
        path.unlink()
        out, _ = first.communicate(timeout=240)
        assert first.returncode == 0
        assert b"exiting: its socket" in out and b"is gone or replaced" in out, out
        third = _server(hook_home, reader_url)
        assert _wait_for(path.exists, 240)
        assert third.poll() is None
    finally:
        for proc in (first, second, third):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


def test_a_server_stopped_the_moment_it_listens_exits(hook_home: Path, reader_url: str) -> None:
    """SIGTERM right after the socket appears lands while the server forks its copy: it used to
    be swallowed there (Python ran the handler's sys.exit inside an at-fork callback), and the
    server kept serving. It must stop whenever the signal comes."""
    path = Path(client.socket_path(hook_home))
    for _ in range(6):
        proc = _server(hook_home, reader_url)
        try:
            assert _wait_for(path.exists, 240, poll=0.002)  # stop it at once: mid-fork
            proc.terminate()
            proc.communicate(timeout=240)
            assert proc.returncode == 0
            assert _wait_for(lambda: not path.exists(), 60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
                path.unlink(missing_ok=True)  # its forked copy leaves when the socket is gone


def test_after_prompts_at_once_each_copy_of_the_server_still_exits(
    hook_home: Path, reader_url: str
) -> None:
    """Two forked copies accept on one socket; after rounds of 20 connections at once, deleting
    the socket ends both (neither is left waiting for a connection that never comes)."""
    env = _env(hook_home, MEMORY_READER_URL=reader_url)
    code = (
        "import sys\nfrom serving.hooks import server\n"
        "server.hook_processes = lambda: 2\nsys.exit(server.main())"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    path = Path(client.socket_path(hook_home))
    try:
        assert _wait_for(path.exists, 240)

        def ask_badly(_: int) -> bytes:
            import socket

            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(120)
                sock.connect(str(path))
                sock.sendall(b"not json\n")
                return sock.recv(4096)

        for _ in range(3):
            with ThreadPoolExecutor(20) as pool:
                answers = list(pool.map(ask_badly, range(20)))
            assert all(b"bad request" in a for a in answers), answers
        path.unlink()
        out, _ = proc.communicate(timeout=240)
        assert out.count(b"exiting: its socket") == 2, out  # the server and its copy
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_the_known_project_lookup_is_one_index_probe(conn: psycopg.Connection) -> None:
    """`lower(project) = lower($1)` on every prompt: answered by sql/039's index, not a scan of
    every memory's project."""
    add_memory(conn, "Kestrel", "Snapshots.", project="HomeLab")
    conn.execute("SET enable_seqscan = off")
    plan = conn.execute(
        "EXPLAIN SELECT project FROM memories WHERE lower(project) = lower(%s) LIMIT 1",
        ["homelab"],
    ).fetchall()
    assert "memories_lower_project_idx" in " ".join(r[0] for r in plan)
    assert hook_query._known_project(conn, "homelab") == "HomeLab"
