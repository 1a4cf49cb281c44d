"""Planted secrets never come out again: not from any table, CLI or MCP output, nor a backup.

More than 25 realistic kinds of fake credentials (generated here from a fixed seed; none is real)
are written into a Codex rollout, a Claude Code session and a chat import: into prompts, answers,
titles and native context (the Codex git remote URL). The real `memory-pipeline run` captures,
distils, embeds and backs them up; then every value, and distinctive fragments of it (the full-text
index stores lower-cased, stemmed pieces), is looked for in:

- every row of every table of the memory database (`pg_dump --data-only`, so `agent_turns`,
  `memories.search_vector`, `search_term_stats` lexemes, jsonb native context... all of it);
- `memory-pipeline search` (table and `--json`) and `context --json`, run through the CLI;
- every MCP tool's structured content and text, through the SDK's in-process client;
- a backup made by `memory-pipeline backup now`, decrypted with the project's own crypto (the
  JSON Lines exports, the manifest, and the dump rendered to SQL by pg_restore).

The same run also proves the non-secrets next to them survived word for word.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from mcp import Client
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from memory_pipeline.backup.crypto import load_key, read_encrypted
from memory_pipeline.backup.layout import DUMP_NAME
from memory_pipeline.backup.pgtools import client_conninfo, pg_tools
from memory_pipeline.cli import app
from memory_pipeline.db.connection import connect

pytestmark = pytest.mark.slow  # a real pipeline run, then searches, MCP calls and a backup

CLI = str(Path(sys.executable).parent / "memory-pipeline")
MCP_TOOLS = frozenset(
    [
        "memory_search",
        "memory_context",
        "memory_read",
        "memory_list",
        "memory_graph",
        "memory_timeline",
    ]
)
SEED = 20250304
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
UPPER_DIGITS = string.ascii_uppercase + string.digits


# --- the planted secrets -----------------------------------------------------------------------


@dataclass
class Plant:
    """One planted secret: its kind, where it was written, and the exact value."""

    kind: str
    where: str
    secret: str
    fragments: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The full-text index keeps lower-cased (and stemmed) pieces split at punctuation: the
        # first 8 characters of every long alphanumeric run survive both, so they are searched
        # too. Runs of 10+ only, so a stemmed ending never hides a leak.
        self.fragments = [run[:8].lower() for run in re.findall(r"[A-Za-z0-9]{10,}", self.secret)]


class Secrets:
    """Deterministic fake credentials in the shapes real ones have."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.plants: list[Plant] = []

    def rand(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def plant(self, kind: str, where: str, secret: str) -> str:
        self.plants.append(Plant(kind, where, secret))
        return secret


def build_sources(root: Path) -> tuple[list[Plant], dict[str, Path]]:
    """Write the three transcripts under `root`; return the plants and the source roots."""
    s = Secrets(SEED)
    codex = write_codex(root / "codex", s)
    claude = write_claude(root / "claude", s)
    imports = write_chat(root / "imports", s)
    return s.plants, {"codex": codex, "claude": claude, "imports": imports}


# Text next to the secrets that must survive capture verbatim (false positives destroy memories).
KEEP = [
    "MAX_TOKENS=4096",
    "PRIMARY_KEY=id",
    "RESTIC_PASSWORD_FILE=/root/.restic-pass",
    'api_key = os.environ["API_KEY"]',
    'SECRET_KEY = env("DJANGO_SECRET_KEY")',
    "apiKey: process.env.ACME_API_KEY",
    "connect(user=user, password=password)",
    "the KEY point is",
    "password reset flow",
    "token budget of 400",
]


def write_codex(home: Path, s: Secrets) -> Path:
    start = datetime(2025, 3, 4, 9, 12, 0, tzinfo=UTC)
    thread = uuid7(start, s.rng)
    remote_token = s.plant(
        "github_token", "codex native context (git remote URL)", "ghs_" + s.rand(ALNUM, 36)
    )
    title_hf = s.plant("huggingface_token", "codex title", "hf_" + s.rand(ALNUM, 34))
    key_id = s.plant(
        "aws_access_key_id",
        "codex prompt",
        "AKIA" + s.rand(string.ascii_uppercase + string.digits, 16),
    )
    aws_secret = s.plant("aws_secret_access_key (JSON)", "codex prompt", s.rand(B64, 40))
    db_password = s.plant("DB_PASSWORD=", "codex prompt", "CorrectHorse42Battery")
    django = s.plant(
        "django SECRET_KEY=",
        "codex prompt",
        "django-insecure-"
        + s.rand(HEX[:10] + "ghkmnpqrstvwxz", 24)
        + "^("
        + s.rand(ALNUM, 20)
        + "=+",
    )
    github = s.plant("GITHUB_TOKEN=", "codex prompt", "ghp_" + s.rand(ALNUM, 36))
    stripe = s.plant("export STRIPE_SECRET_KEY=", "codex prompt", "sk_live_" + s.rand(ALNUM, 24))
    whsec = s.plant("stripe webhook secret", "codex prompt", "whsec_" + s.rand(ALNUM, 32))
    sendgrid = s.plant(
        "sendgrid key", "codex prompt", f"SG.{s.rand(ALNUM, 22)}.{s.rand(ALNUM, 43)}"
    )
    twilio = s.plant("TWILIO_AUTH_TOKEN=", "codex prompt", s.rand(HEX, 32))
    mailgun = s.plant(".env MAILGUN_API_KEY=", "codex prompt", "key-" + s.rand(HEX, 32))
    datadog = s.plant("DD_API_KEY= (*_KEY)", "codex answer", s.rand(HEX, 32))
    pypi = s.plant("pypi token", "codex prompt", "pypi-AgEIcHlwaS5vcmc" + s.rand(ALNUM, 60))
    npm = s.plant("npm token", "codex prompt", "npm_" + s.rand(ALNUM, 36))
    hf = s.plant("huggingface --token flag", "codex prompt", "hf_" + s.rand(ALNUM, 34))

    iam_json = json.dumps(
        {
            "AccessKey": {
                "UserName": "ci-deployer",
                "AccessKeyId": key_id,
                "Status": "Active",
                "SecretAccessKey": aws_secret,
                "CreateDate": "2025-03-04T09:12:44+00:00",
            }
        },
        indent=4,
    )
    turns = [
        (
            "I just ran `aws iam create-access-key --user-name ci-deployer` and got this back. "
            f"Where should the billing CI keep it?\n\n{iam_json}",
            "Keep both values as masked CI variables of the billing project, never in the "
            "repository, and give ci-deployer only the S3 and ECR permissions the deploy needs. "
            "The pair is now in this conversation, so create a new one after the move and "
            "deactivate this one.",
        ),
        (
            "This is the billing .env. Which of these belong in the secret store?\n\n"
            f"DB_PASSWORD={db_password}\n"
            f"SECRET_KEY={django}\n"
            f"GITHUB_TOKEN={github}\n"
            f"export STRIPE_SECRET_KEY={stripe}\n"
            f"STRIPE_WEBHOOK_SECRET={whsec}\n"
            f"SENDGRID_API_KEY={sendgrid}\n"
            f"TWILIO_AUTH_TOKEN={twilio}\n"
            f"MAILGUN_API_KEY={mailgun}\n"
            "MAX_TOKENS=4096\n"
            "PRIMARY_KEY=id\n"
            "RESTIC_PASSWORD_FILE=/root/.restic-pass",
            "Everything except MAX_TOKENS=4096 and PRIMARY_KEY=id is a credential and belongs in "
            "the secret store. In settings.py read them from the environment, e.g. "
            '`api_key = os.environ["API_KEY"]` and `SECRET_KEY = env("DJANGO_SECRET_KEY")`, and '
            "pass them on explicitly: `connect(user=user, password=password)`. Rotate the "
            f"Datadog key you pasted yesterday too, DD_API_KEY={datadog}; the KEY point is that "
            "anything pasted here counts as leaked.",
        ),
        (
            "Publishing from CI next. The release job has "
            f"TWINE_PASSWORD={pypi} and an .npmrc with "
            f"//registry.npmjs.org/:_authToken={npm} and the model download step runs "
            f"`huggingface-cli login --token {hf}`. Is that ok?",
            "Switch PyPI to trusted publishing (OIDC) and drop the stored token; use a granular "
            "npm automation token scoped to the one package; give the Hugging Face step a "
            "read-only token. Keep the CI prompt under a token budget of 400 so the job log "
            "stays short, and test the password reset flow before inviting the new deployer.",
        ),
    ]
    path = (
        home
        / "sessions"
        / f"{start:%Y/%m/%d}"
        / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{thread}.jsonl"
    )
    path.parent.mkdir(parents=True)
    lines = [
        envelope(
            start,
            "session_meta",
            {
                "id": thread,
                "timestamp": iso(start),
                "cwd": "/home/dev/src/billing",
                "originator": "codex-tui",
                "cli_version": "0.125.0",
                "source": "cli",
                "model_provider": "openai",
                "git": {
                    "commit_hash": "9f1c2d3e4b5a69788796a5b4c3d2e1f0a9b8c7d6",
                    "branch": "ops/rotate-ci-credentials",
                    "repository_url": f"https://x-access-token:{remote_token}@github.com/acme/billing.git",
                },
            },
        )
    ]
    when = start
    for n, (prompt, answer) in enumerate(turns):
        turn_id = uuid7(when, s.rng)
        when += timedelta(minutes=4)
        lines += [
            envelope(when, "event_msg", {"type": "task_started", "turn_id": turn_id}),
            envelope(
                when,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": prompt}],
                },
            ),
            envelope(
                when,
                "event_msg",
                {"type": "user_message", "message": prompt, "images": [], "kind": "plain"},
            ),
        ]
        when += timedelta(minutes=1, seconds=n)
        lines += [
            envelope(when, "event_msg", {"type": "agent_message", "message": answer}),
            envelope(
                when,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                    "phase": "final_answer",
                },
            ),
            envelope(
                when,
                "event_msg",
                {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer},
            ),
        ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    index = {
        "id": thread,
        "thread_name": f"revoke {title_hf} and rotate CI credentials",
        "updated_at": iso(when),
    }
    (home / "session_index.jsonl").write_text(json.dumps(index) + "\n")
    return home


def write_claude(home: Path, s: Secrets) -> Path:
    start = datetime(2025, 3, 5, 14, 0, 0, tzinfo=UTC)
    session = str(uuid4(s.rng))
    title_slack = s.plant(
        "slack bot token",
        "claude code title",
        f"xoxb-{s.rand(string.digits, 12)}-{s.rand(string.digits, 13)}-{s.rand(ALNUM, 24)}",
    )
    slack = s.plant(
        "slack bot token",
        "claude code prompt",
        f"xoxb-{s.rand(string.digits, 12)}-{s.rand(string.digits, 13)}-{s.rand(ALNUM, 24)}",
    )
    webhook = s.plant("slack webhook URL", "claude code prompt", s.rand(ALNUM, 24))
    team, channel = s.rand(UPPER_DIGITS, 8), s.rand(UPPER_DIGITS, 10)
    webhook_url = f"https://hooks.slack.com/services/T{team}/B{channel}/{webhook}"
    api_key = s.plant("camelCase apiKey:", "claude code prompt", s.rand(ALNUM, 32))
    client_secret = s.plant(
        "JSON client_secret", "claude code prompt", "GOCSPX-" + s.rand(ALNUM, 28)
    )
    pem_body = "\n".join(s.rand(B64, 64) for _ in range(4))
    pem = s.plant(
        "PEM private key",
        "claude code prompt",
        f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----",
    )
    bearer = s.plant("bearer header", "claude code prompt", s.rand(ALNUM, 40))
    basic = s.plant(
        "basic-auth header",
        "claude code prompt",
        base64.b64encode(f"deploy:{s.rand(ALNUM, 18)}".encode()).decode(),
    )
    jwt_payload = (
        base64.urlsafe_b64encode(json.dumps({"sub": s.rand(ALNUM, 16), "exp": 1741190400}).encode())
        .decode()
        .rstrip("=")
    )
    jwt = s.plant(
        "JWT",
        "claude code answer",
        f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{jwt_payload}.{s.rand(ALNUM, 43)}",
    )
    client_json = json.dumps(
        {
            "web": {
                "client_id": "402116-acme.apps.googleusercontent.com",
                "client_secret": client_secret,
                "redirect_uris": ["https://app.acme.dev/oauth/callback"],
            }
        }
    )
    turns = [
        (
            f"the slack bot posts every alert twice. bot token is {slack} and the incoming "
            f"webhook is {webhook_url}. client setup:\n\n```js\nconst client = new Client"
            f'({{ apiKey: "{api_key}", region: "eu-west-1" }})\n```',
            "The alert fires once but two integrations deliver it: the bot and the incoming "
            "webhook both post to #alerts. Keep the bot, delete the webhook. And read the key "
            "from the environment: `apiKey: process.env.ACME_API_KEY`.",
        ),
        (
            f"google sign-in breaks on staging. client file:\n{client_json}\n"
            f"and the deploy key the staging box uses:\n{pem}",
            "The redirect URI lists only production; add https://staging.acme.dev/oauth/callback "
            "in the Google console. Both the client secret and the deploy key were pasted here: "
            "regenerate them and store them in the vault.",
        ),
        (
            "these two calls fail with 401:\n"
            f"curl -H 'Authorization: Bearer {bearer}' https://api.acme.dev/v1/me\n"
            f"curl -H 'Authorization: Basic {basic}' https://legacy.acme.dev/export",
            f"The session token the login returned, {jwt}, expired at 16:00 UTC: the API "
            "rejects it, and the legacy host no longer accepts basic auth at all. Refresh the "
            "token before each call and move the export to the v1 API.",
        ),
    ]
    project = home / "projects" / "-home-dev-src-webapp"
    project.mkdir(parents=True)
    common = {
        "isSidechain": False,
        "userType": "external",
        "entrypoint": "cli",
        "cwd": "/home/dev/src/webapp",
        "sessionId": session,
        "version": "2.1.252",
        "gitBranch": "feat/google-sign-in",
    }
    lines: list[dict[str, object]] = []
    parent: str | None = None
    when = start
    for prompt, answer in turns:
        user_id, reply_id, done_id = (str(uuid4(s.rng)) for _ in range(3))
        lines.append(
            {
                **common,
                "parentUuid": parent,
                "type": "user",
                "promptId": str(uuid4(s.rng)),
                "message": {"role": "user", "content": prompt},
                "uuid": user_id,
                "timestamp": iso(when),
                "promptSource": "typed",
                "origin": {"kind": "human"},
            }
        )
        when += timedelta(seconds=40)
        lines.append(
            {
                **common,
                "parentUuid": user_id,
                "type": "assistant",
                "message": {
                    "model": "claude-opus-4",
                    "id": f"msg_{s.rand(ALNUM, 24)}",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": answer}],
                    "stop_reason": "end_turn",
                },
                "requestId": f"req_{s.rand(ALNUM, 24)}",
                "uuid": reply_id,
                "timestamp": iso(when),
            }
        )
        lines.append(
            {
                **common,
                "parentUuid": reply_id,
                "type": "system",
                "subtype": "turn_duration",
                "durationMs": 40000,
                "uuid": done_id,
                "timestamp": iso(when),
                "isMeta": False,
            }
        )
        parent = done_id
        when += timedelta(minutes=5)
    lines.append(
        {
            "type": "custom-title",
            "customTitle": f"Slack bot {title_slack} posts twice",
            "sessionId": session,
        }
    )
    (project / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return home


def write_chat(directory: Path, s: Secrets) -> Path:
    start = datetime(2025, 3, 6, 18, 30, 0, tzinfo=UTC)
    title_openai = s.plant("openai key", "chat import title", "sk-proj-" + s.rand(ALNUM, 48))
    account_key = s.plant("azure AccountKey=", "chat import prompt", s.rand(B64, 86) + "==")
    flag = s.plant("--password flag", "chat import prompt", s.rand(string.ascii_letters, 16))
    db_url_password = s.plant(
        "postgres://user:pass@host", "chat import answer", "Vq9" + s.rand(ALNUM, 15)
    )
    openai = s.plant("openai key", "chat import prompt", "sk-proj-" + s.rand(ALNUM, 48))
    anthropic = s.plant(
        "anthropic key",
        "chat import prompt",
        f"sk-ant-api03-{s.rand(ALNUM, 86)}-{s.rand(ALNUM, 6)}AA",
    )
    google = s.plant("google api key", "chat import prompt", "AIza" + s.rand(ALNUM, 35))
    gitlab = s.plant("gitlab token", "chat import prompt", "glpat-" + s.rand(ALNUM, 20))
    messages = [
        (
            "user",
            "The nightly export to blob storage stopped. Connection string:\n"
            "DefaultEndpointsProtocol=https;AccountName=acmeprodstore;"
            f"AccountKey={account_key};EndpointSuffix=core.windows.net\n"
            "and the backup before it runs "
            f"`mongodump --host db1 --username backup --password {flag} --out /srv/dump`.",
        ),
        (
            "assistant",
            "The storage account key was rotated on Monday, so the export authenticates with a "
            "stale key: regenerate the connection string from key2 and update the job. Your "
            f"reporting URL postgres://billing:{db_url_password}@db.prod.internal:5432/billing "
            "carries a password too; move it into ~/.pgpass.",
        ),
        (
            "user",
            "The notebook we shared also had these in a cell: "
            f"OPENAI_API_KEY={openai} ANTHROPIC_API_KEY={anthropic} GOOGLE_API_KEY={google} "
            f"GITLAB_TOKEN={gitlab}. What now?",
        ),
        (
            "assistant",
            "Revoke all four in their consoles today, then clear the notebook's output and "
            "history; a shared notebook keeps old cell outputs in its revision history.",
        ),
    ]
    directory.mkdir(parents=True)
    rows = []
    for n, (role, text) in enumerate(messages):
        row = {
            "task_id": "chat-blob-export",
            "role": role,
            "text": text,
            "timestamp": iso(start + timedelta(minutes=3 * n)),
            "message_id": f"m{n}",
        }
        if n == 0:
            row["title"] = f"blob export broke; key {title_openai} in the notebook"
        rows.append(row)
    (directory / "export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


# --- small helpers ------------------------------------------------------------------------------


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def envelope(when: datetime, kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": iso(when), "type": kind, "payload": payload}


def uuid7(when: datetime, rng: random.Random) -> str:
    ms = int(when.timestamp() * 1000)
    tail = (
        f"{rng.getrandbits(12):03x}",
        f"{0x8000 | rng.getrandbits(14):04x}",
        f"{rng.getrandbits(48):012x}",
    )
    return f"{ms >> 16:08x}-{ms & 0xFFFF:04x}-7{tail[0]}-{tail[1]}-{tail[2]}"


def uuid4(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


# --- the sweep ----------------------------------------------------------------------------------

# One question per planted conversation (never containing a secret: a query is echoed back and
# recorded). With a limit of 50 each returns every memory of this small corpus anyway.
QUERIES = [
    "which env variables belong in the secret store",
    "slack bot posts every alert twice",
    "nightly export to blob storage stopped",
]


class Sweep:
    """Collects every text a surface produced, then names the plants found in each."""

    def __init__(self, plants: list[Plant]) -> None:
        self.plants = plants
        self.surfaces: dict[str, list[str]] = {}

    def add(self, surface: str, text: str | bytes) -> None:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        self.surfaces.setdefault(surface, []).append(text)

    def text(self, prefix: str) -> str:
        return "\n".join(
            t for name, texts in self.surfaces.items() if name.startswith(prefix) for t in texts
        )

    def leaks(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for surface, texts in self.surfaces.items():
            text = "\n".join(texts)
            lower = text.lower()
            for p in self.plants:
                if p.secret in text or any(f in lower for f in p.fragments):
                    found.setdefault(f"{p.kind} [{p.where}]", []).append(surface)
        return found


@pytest.fixture
def sources(tmp_path: Path) -> tuple[list[Plant], dict[str, Path]]:
    return build_sources(tmp_path / "sources")


@pytest.fixture
def env(
    tmp_path: Path,
    db_url: str,
    dagster_pg_url: str,
    sources: tuple[list[Plant], dict[str, Path]],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, str]]:
    """The user's environment for this run: real sources only, our test database."""
    _, roots = sources
    values = {
        "MEMORY_HOME": str(tmp_path / "home"),
        "DATABASE_URL": db_url,
        "DAGSTER_PG_URL": dagster_pg_url,
        "MEMORY_SOURCES": "real",
        "CODEX_HOME": str(roots["codex"]),
        "CLAUDE_CONFIG_DIR": str(roots["claude"]),
        "MEMORY_IMPORT_DIR": str(roots["imports"]),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    for name in ("DAGSTER_HOME", "MEMORY_BACKUP_KEY", "MEMORY_READER_URL", "MEMORY_SEMANTIC_MODEL"):
        monkeypatch.delenv(name, raising=False)
    yield dict(os.environ)


def run_cli(*args: str) -> str:
    """A read-only command through the CLI entry point, in process: its stdout and stderr."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout + result.stderr


def dump_sql(dsn: str) -> bytes:
    """Every row of every table of a database, as pg_dump writes them."""
    conninfo, child_env = client_conninfo(dsn)
    args = [str(pg_tools(None).pg_dump), "--data-only", "--no-password", f"--dbname={conninfo}"]
    return subprocess.run(args, env=child_env, capture_output=True, check=True, timeout=60).stdout


async def mcp_outputs(reader_url: str, memory_ids: list[str]) -> list[tuple[str, str]]:
    from serving.mcp.pool import ReaderPool
    from serving.mcp.tools import build_server
    from serving.search import QueryEmbedder

    pool = ReaderPool(reader_url)
    outputs: list[tuple[str, str]] = []
    try:
        server = build_server(pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"))
        async with Client(server) as client:

            async def call(tool: str, args: dict[str, object]) -> dict[str, object]:
                result = await client.call_tool(tool, args)
                text = "\n".join(getattr(block, "text", "") for block in result.content)
                assert not result.is_error, (tool, args, text)
                outputs.append((tool, json.dumps(result.structured_content) + "\n" + text))
                return result.structured_content or {}

            for query in QUERIES:
                await call("memory_search", {"query": query, "limit": 50})
                await call("memory_context", {"task": query, "token_budget": 12000})
            cursor = None
            while True:
                page = await call(
                    "memory_list", {"limit": 50, **({"cursor": cursor} if cursor else {})}
                )
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            for memory_id in memory_ids:
                await call("memory_read", {"memory_id": memory_id})
                await call("memory_graph", {"memory_id": memory_id, "depth": 3})
            await call("memory_timeline", {"around": "2025-03-05T12:00:00Z", "window_hours": 168})
    finally:
        pool.close()
    return outputs


def test_no_planted_secret_survives_anywhere(  # type: ignore[no-untyped-def]
    sources, env, db_url: str, reader_url: str, dagster_pg_url: str
) -> None:
    plants, _ = sources
    assert len({p.kind for p in plants}) >= 20
    sweep = Sweep(plants)

    # The README's main command, as a user runs it.
    run = subprocess.run([CLI, "run"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    sweep.add("cli:run", run.stdout + run.stderr)

    with connect(db_url, autocommit=True) as conn:
        turns = conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0]  # type: ignore[index]
        memory_ids = [str(r[0]) for r in conn.execute("SELECT id FROM memories ORDER BY id")]
        stored = "\n".join(
            p + "\n" + o for p, o in conn.execute("SELECT prompt, outcome FROM agent_turns")
        )
    assert turns == 8 and memory_ids  # every planted turn was captured and distilled

    # Serving, through the CLI and through MCP.
    for query in QUERIES:
        sweep.add("cli:search --json", run_cli("search", query, "--json", "--limit", "50"))
        sweep.add("cli:search", run_cli("search", query, "--limit", "50"))
        sweep.add("cli:context --json", run_cli("context", query, "--tokens", "12000", "--json"))
    for tool, text in anyio.run(mcp_outputs, reader_url, memory_ids):
        sweep.add(f"mcp:{tool}", text)

    # A backup, decrypted with the key that wrote it.
    sweep.add("cli:backup now", run_cli("backup", "now"))
    home = Path(env["MEMORY_HOME"])
    key = load_key(home / "backup.key", create=False)
    backups = sorted(p for p in (home / "backups").iterdir() if not p.name.startswith("."))
    newest = backups[-1]
    restore = str(pg_tools(None).pg_restore)
    for path in sorted(newest.iterdir()):
        plain = read_encrypted(path, key)
        if path.name == DUMP_NAME:
            plain = subprocess.run(
                [restore, "--file=-"], input=plain, capture_output=True, check=True, timeout=60
            ).stdout
            assert b"COPY public.agent_turns" in plain
        sweep.add(f"backup:{path.name}", plain)

    # Last, every table: retrieval events written by the searches above are in it too.
    sweep.add("database (every table)", dump_sql(db_url))
    dagster_db = dagster_pg_url.rsplit("/", 1)[1].split("?")[0]
    sweep.add("dagster database", dump_sql(make_conninfo(db_url, dbname=dagster_db)))

    # The sweep looked at real conversation text on every kind of surface, not at empty output.
    for surface in ("database", "backup:agent_turns", "cli:search --json", "mcp:memory_read"):
        assert "PRIMARY_KEY=id" in sweep.text(surface), surface
    assert {name for name in sweep.surfaces if name.startswith("mcp:")} == {
        f"mcp:{tool}" for tool in MCP_TOOLS
    }
    found = set(re.findall(r'"id": "([0-9a-f-]{36})"', sweep.text("cli:search --json")))
    assert found >= set(memory_ids)

    leaks = sweep.leaks()
    assert not leaks, "secrets leaked:\n" + "\n".join(
        f"  {kind}: {', '.join(sorted(set(where)))}" for kind, where in sorted(leaks.items())
    )
    missing = [text for text in KEEP if text not in stored]
    assert not missing, f"redaction destroyed ordinary text: {missing}"
