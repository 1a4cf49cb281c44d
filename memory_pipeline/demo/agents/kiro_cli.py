"""Kiro CLI's demo sessions (`conversations/kiro.py`): v2 session files and the REPL history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_pipeline.demo import render_kiro

HOME = "kiro_home"


def render(home: Path, manifest: Any) -> None:
    render_kiro.render("kiro_cli", home, manifest)
