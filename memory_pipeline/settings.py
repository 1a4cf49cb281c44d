"""Configuration, read from environment variables with safe, documented defaults.

Everything a user may need to change is here, with the variable that sets it. Nothing reads the
environment anywhere else, so the README's configuration table and this module stay in step.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_CORPUS = Path(__file__).resolve().parent / "demo" / "corpus"


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
            embedding_space=os.environ.get("MEMORY_EMBEDDING_SPACE", "local:all-minilm-l6-v2:384"),
            ollama_timeout_s=float(os.environ.get("MEMORY_OLLAMA_TIMEOUT_S", "120")),
            semantic_quiet_minutes=float(os.environ.get("MEMORY_SEMANTIC_QUIET_MINUTES", "30")),
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
