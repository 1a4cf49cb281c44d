"""What lies beside the session files: the project's root directory and the typed prompts.

Learnt from google-gemini/gemini-cli @ 5411f113:

* `~/.gemini/tmp/<project>/` is named by the project's sha256 hash of its root path
  (`utils/paths.ts` `getProjectHash`; every session's `projectHash`) in older versions, by a
  short slug in newer ones (`config/storage.ts` `getProjectTempDir`, `config/projectRegistry.ts`):
  `~/.gemini/projects.json` is `{"projects": {"<absolute root>": "<slug>"}}` and each slug
  directory holds `.project_root`, the root path as text. The root is found from
  `.project_root`, else the slug in `projects.json`, else the `projects.json` path whose sha256
  is the session's `projectHash`; otherwise only the hash is known (kept as provenance).
* `<project>/logs.json` (`core/logger.ts`): a JSON array of `{sessionId, messageId, timestamp,
  type: "user", message}`, one entry per prompt typed into the interactive UI
  (`cli/src/ui/hooks/useGeminiStream.ts` `logger.logMessage`, before the prompt is sent). The
  non-interactive CLI (`gemini -p`, piped input, `nonInteractiveCli.ts`) never writes it, so a
  session of this project with no entry there was not typed into the UI.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from memory_pipeline.tuning import GEMINI_LOGS_MAX_BYTES

LOGS = "logs.json"
PROJECT_ROOT = ".project_root"
REGISTRY = "projects.json"

_Cache = dict[Path, tuple[tuple[int, int], Any]]


def _load(path: Path, cache: _Cache) -> Any:
    """The JSON value in `path` (None when missing, too large or damaged), cached per version."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    version = (st.st_size, st.st_mtime_ns)
    hit = cache.get(path)
    if hit is not None and hit[0] == version:
        return hit[1]
    value: Any = None
    if 0 < st.st_size <= GEMINI_LOGS_MAX_BYTES:
        try:
            with open(path, "rb") as handle:
                value = json.loads(handle.read(GEMINI_LOGS_MAX_BYTES + 1))
        except (OSError, ValueError, RecursionError):
            value = None
    cache[path] = (version, value)
    return value


class ProjectFiles:
    """Reads (and caches by file version) the registry, the root markers and the prompt logs."""

    def __init__(self) -> None:
        self._cache: _Cache = {}

    def project_root(self, gemini_dir: Path, project_dir: Path, project_hash: str | None):
        """(root path, how it was found) or (None, None)."""
        try:
            with open(project_dir / PROJECT_ROOT, "rb") as handle:
                text = handle.read(4096).decode("utf-8", errors="replace").strip()
            if text:
                return text, "gemini_cli:.project_root"
        except OSError:
            pass
        registry = _load(gemini_dir / REGISTRY, self._cache)
        projects = registry.get("projects") if isinstance(registry, dict) else None
        if isinstance(projects, dict):
            for root, slug in projects.items():
                if isinstance(root, str) and slug == project_dir.name:
                    return root, "gemini_cli:projects.json"
            if project_hash:
                for root in projects:
                    if isinstance(root, str) and _sha256(root) == project_hash:
                        return root, "gemini_cli:projects.json"
        return None, None

    def typed(self, project_dir: Path, session_id: str) -> tuple[bool, list[str]]:
        """(whether `logs.json` could be read, the messages typed in `session_id`)."""
        value = _load(project_dir / LOGS, self._cache)
        if not isinstance(value, list):
            return False, []
        typed = [
            e["message"]
            for e in value
            if isinstance(e, dict)
            and e.get("sessionId") == session_id
            and isinstance(e.get("message"), str)
        ]
        return True, typed


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
