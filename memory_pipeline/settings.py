"""Configuration, read from environment variables with safe, documented defaults.

Everything a user may need to change is here, with the variable that sets it. Nothing reads the
environment anywhere else, so the README's configuration table and this module stay in step.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from memory_pipeline import tuning

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_CORPUS = Path(__file__).resolve().parent / "demo" / "corpus"
DEMO_GOLD = Path(__file__).resolve().parent / "demo" / "gold.jsonl"


def _default_memory_home() -> Path:
    # XDG data dir: per user, survives reboots, not a cache the OS may clear.
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "memory-pipeline"


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else default


class Settings(BaseModel):
    """Resolved configuration. Build it with `Settings.from_env()`."""

    model_config = ConfigDict(frozen=True)

    memory_home: Path
    database_url: str | None  # external PostgreSQL; None means the embedded server
    dagster_pg_url: str | None  # override for Dagster's instance database
    reader_url: str | None  # override for the read-only role's connection
    codex_home: Path
    claude_home: Path
    import_dir: Path
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

    @classmethod
    def from_env(cls) -> Settings:
        home = _env_path("MEMORY_HOME", _default_memory_home())
        return cls(
            memory_home=home,
            database_url=os.environ.get("DATABASE_URL") or None,
            dagster_pg_url=os.environ.get("DAGSTER_PG_URL") or None,
            reader_url=os.environ.get("MEMORY_READER_URL") or None,
            codex_home=_env_path("CODEX_HOME", Path.home() / ".codex"),
            claude_home=_env_path("CLAUDE_CONFIG_DIR", Path.home() / ".claude"),
            import_dir=_env_path("MEMORY_IMPORT_DIR", home / "imports"),
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
