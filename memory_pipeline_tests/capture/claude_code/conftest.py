from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty `~/.claude` with one project directory."""
    (tmp_path / "claude" / "projects" / "-home-dev-app").mkdir(parents=True)
    return tmp_path / "claude"
