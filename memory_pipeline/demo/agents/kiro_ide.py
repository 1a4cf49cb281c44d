"""Kiro IDE's demo sessions (`conversations/kiro.py`): new-layout workspace sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_pipeline.demo import render_kiro

HOME = "kiro_ide/kiro.kiroagent"


def render(home: Path, manifest: Any) -> None:
    render_kiro.render("kiro_ide", home, manifest)
