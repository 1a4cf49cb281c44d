"""Configuration, read from environment variables with safe, documented defaults.

Everything a user may need to change is here, with the variable that sets it. Nothing reads the
environment anywhere else, so the README's configuration table and this module stay in step.
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from memory_pipeline import tuning
from memory_pipeline.errors import UserError
from memory_pipeline.models.sources import SOURCES, resolve_roots

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_CORPUS = Path(__file__).resolve().parent / "demo" / "corpus"
DEMO_GOLD = Path(__file__).resolve().parent / "demo" / "gold.jsonl"
# Questions whose evidence sits in the demo inbox's documents and transcripts (issue 33).
DEMO_SOURCES_GOLD = Path(__file__).resolve().parent / "demo" / "sources_gold.jsonl"


def _default_memory_home() -> Path:
    # XDG data dir: per user, survives reboots, not a cache the OS may clear.
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "memory-pipeline"


def _local_timezone() -> str:
    """The machine's IANA time zone (TZ, else /etc/localtime's target), UTC when unknown."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz:
        return tz
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    marker = "zoneinfo/"
    return target.split(marker, 1)[1] if marker in target else "UTC"


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else default


def _env_day(name: str) -> date | None:
    value = (os.environ.get(name) or "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UserError(f"{name}={value!r} is not a day; write it as YYYY-MM-DD") from None


def _env_count(name: str, default: int) -> int:
    value = (os.environ.get(name) or "").strip()
    if not value:
        return default
    if not (value.isascii() and value.isdigit()):
        raise UserError(f"{name}={value!r} is not a number of days; write a whole number >= 0")
    return int(value)


class Settings(BaseModel):
    """Resolved configuration. Build it with `Settings.from_env()`."""

    model_config = ConfigDict(frozen=True)

    memory_home: Path
    database_url: str | None  # external PostgreSQL; None means the embedded server
    dagster_pg_url: str | None  # override for Dagster's instance database
    reader_url: str | None  # override for the read-only role's connection
    # Per source (memory_pipeline/models/sources.py): the roots its connector looks in, from the
    # source's own override variable (CODEX_HOME, CLAUDE_CONFIG_DIR, ...) or its defaults.
    source_homes: dict[str, list[Path]]
    sources: str  # "auto" | "demo" | "real"
    ollama_host: str
    semantic_model: str | None  # Ollama chat model; None means offline rules only
    embedding_space: str
    ollama_timeout_s: float
    semantic_quiet_minutes: float
    # Backups (memory_pipeline/backup). The key itself is never a setting: it comes from
    # MEMORY_BACKUP_KEY or the key file, read only when a backup or restore needs it.
    backup_dir: Path
    backup_key_file: Path
    backup_copy_command: str | None  # a command template, run without a shell after each backup
    backup_keep_daily: int
    backup_keep_weekly: int
    pg_dump: Path | None  # a pg_dump for a server newer than the bundled one; pg_restore beside it
    # Privacy at capture (memory_pipeline/forget/privacy.py): rules `cwd:GLOB`, `repo:NAME`,
    # `source:KIND`, comma-separated. Excluded tasks are never captured; private ones are captured
    # into the private tier, which serving leaves out unless asked.
    memory_exclude: str = ""
    memory_private: str = ""
    # The inbox (memory_pipeline/inbox): web pages, documents, transcripts and `*.url` lists
    # dropped here are stored as searchable sources; None: MEMORY_HOME/inbox.
    inbox_dir: Path | None = None
    # Express (memory_pipeline/express): the briefing's Ollama editor (None: offline), the
    # weekday of its weekly digest, where its links to memories point, and the SMTP push (no
    # push without a host and a recipient; the password is read from MEMORY_SMTP_PASSWORD only
    # when a mail is sent, never kept here).
    brief_model: str | None = None
    brief_digest_weekday: str = "monday"
    brief_memory_url: str = "memory:{id}"
    smtp_host: str | None = None
    smtp_port: int | None = None  # None: 465 with tls, else 587
    smtp_security: str = "starttls"  # starttls | tls | none
    smtp_user: str | None = None
    smtp_from: str | None = None
    smtp_to: str | None = None  # comma-separated recipients
    # Agent hooks (serving/hooks): token budgets of a session-start and a per-prompt injection.
    hook_session_tokens: int = tuning.HOOK_SESSION_TOKENS
    hook_prompt_tokens: int = tuning.HOOK_PROMPT_TOKENS
    # The dream cycle (memory_pipeline/dream).
    dream_model: str | None  # Ollama chat model for Thinker and panel; None: offline rules
    dream_timezone: str  # the daily dream run starts at noon in this IANA zone
    dream_post_learn_memories: int  # a post_learn run once this many new memories arrived
    dream_call_budget: int  # at most this many model calls per dream run
    dream_approval: bool  # hold accepted candidates for `dream approve` instead of storing them
    # Daily partitions (memory_pipeline/partitions.py): an explicit first day, or the most recent
    # N days; neither: from the home's first captured day.
    partition_start: date | None = None
    partition_days: int = tuning.PARTITION_DAYS

    @classmethod
    def from_env(cls) -> Settings:
        home = _env_path("MEMORY_HOME", _default_memory_home())
        return cls(
            memory_home=home,
            memory_exclude=os.environ.get("MEMORY_EXCLUDE", ""),
            memory_private=os.environ.get("MEMORY_PRIVATE", ""),
            database_url=os.environ.get("DATABASE_URL") or None,
            dagster_pg_url=os.environ.get("DAGSTER_PG_URL") or None,
            reader_url=os.environ.get("MEMORY_READER_URL") or None,
            source_homes={s.name: resolve_roots(s, os.environ, home) for s in SOURCES},
            inbox_dir=_env_path("MEMORY_INBOX_DIR", home / "inbox"),
            sources=os.environ.get("MEMORY_SOURCES", "auto"),
            ollama_host=os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"),
            semantic_model=os.environ.get("MEMORY_SEMANTIC_MODEL") or None,
            embedding_space=os.environ.get("MEMORY_EMBEDDING_SPACE", tuning.LOCAL_EMBEDDING_SPACE),
            ollama_timeout_s=float(os.environ.get("MEMORY_OLLAMA_TIMEOUT_S", "120")),
            semantic_quiet_minutes=float(
                os.environ.get("MEMORY_SEMANTIC_QUIET_MINUTES", tuning.SEMANTIC_QUIET_MINUTES)
            ),
            backup_dir=_env_path("MEMORY_BACKUP_DIR", home / "backups"),
            backup_key_file=_env_path("MEMORY_BACKUP_KEY_FILE", home / "backup.key"),
            backup_copy_command=os.environ.get("MEMORY_BACKUP_COPY_COMMAND") or None,
            backup_keep_daily=int(
                os.environ.get("MEMORY_BACKUP_KEEP_DAILY", tuning.BACKUP_KEEP_DAILY)
            ),
            backup_keep_weekly=int(
                os.environ.get("MEMORY_BACKUP_KEEP_WEEKLY", tuning.BACKUP_KEEP_WEEKLY)
            ),
            pg_dump=(
                Path(os.environ["MEMORY_PG_DUMP"]).expanduser()
                if os.environ.get("MEMORY_PG_DUMP")
                else None
            ),
            brief_model=(
                os.environ.get("MEMORY_BRIEF_MODEL")
                or os.environ.get("MEMORY_SEMANTIC_MODEL")
                or None
            ),
            brief_digest_weekday=os.environ.get("MEMORY_BRIEF_DIGEST_WEEKDAY") or "monday",
            brief_memory_url=os.environ.get("MEMORY_BRIEF_MEMORY_URL") or "memory:{id}",
            smtp_host=os.environ.get("MEMORY_SMTP_HOST") or None,
            smtp_port=(
                int(os.environ["MEMORY_SMTP_PORT"]) if os.environ.get("MEMORY_SMTP_PORT") else None
            ),
            smtp_security=os.environ.get("MEMORY_SMTP_SECURITY") or "starttls",
            smtp_user=os.environ.get("MEMORY_SMTP_USER") or None,
            smtp_from=os.environ.get("MEMORY_SMTP_FROM") or None,
            smtp_to=os.environ.get("MEMORY_SMTP_TO") or None,
            hook_session_tokens=int(
                os.environ.get("MEMORY_HOOK_SESSION_TOKENS", tuning.HOOK_SESSION_TOKENS)
            ),
            hook_prompt_tokens=int(
                os.environ.get("MEMORY_HOOK_PROMPT_TOKENS", tuning.HOOK_PROMPT_TOKENS)
            ),
            dream_model=(
                os.environ.get("MEMORY_DREAM_MODEL")
                or os.environ.get("MEMORY_SEMANTIC_MODEL")
                or None
            ),
            dream_timezone=os.environ.get("MEMORY_TIMEZONE") or _local_timezone(),
            dream_post_learn_memories=int(
                os.environ.get("MEMORY_DREAM_POST_LEARN", tuning.DREAM_POST_LEARN_MEMORIES)
            ),
            dream_call_budget=int(
                os.environ.get("MEMORY_DREAM_CALL_BUDGET", tuning.DREAM_CALL_BUDGET)
            ),
            dream_approval=os.environ.get("MEMORY_DREAM_APPROVAL", "").strip().lower()
            in ("1", "true", "yes", "on"),
            partition_start=_env_day("MEMORY_PARTITION_START"),
            partition_days=_env_count("MEMORY_PARTITION_DAYS", tuning.PARTITION_DAYS),
        )

    @property
    def pgdata(self) -> Path:
        return self.memory_home / "pgdata"

    @property
    def dagster_home(self) -> Path:
        return self.memory_home / "dagster"

    @property
    def log_dir(self) -> Path:
        return self.memory_home / "logs"

    def source_home(self, source: str) -> Path:
        """The first root of a source (its home: `~/.codex` or CODEX_HOME, ...)."""
        return self.source_homes[source][0]
