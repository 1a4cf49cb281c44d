"""Fixtures of the Express tests: the real command line on a test database."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.cli import main


@pytest.fixture
def cli_env(tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DATABASE_URL", db_url)
    for name in ("MEMORY_SEMANTIC_MODEL", "MEMORY_BRIEF_MODEL", "MEMORY_SMTP_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_BRIEF_DIGEST_WEEKDAY", "sunday")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The real entry point (errors become one line and exit status 2), in process."""

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr("sys.argv", ["memory-pipeline", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return run
