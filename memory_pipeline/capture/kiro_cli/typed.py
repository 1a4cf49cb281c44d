"""What a person typed into the Kiro CLI chat REPL: the prompt-recall history.

Kiro CLI (and Amazon Q Developer CLI before it) keeps the REPL's line history with rustyline in
`~/.kiro/.cli_bash_history` (Amazon Q: `~/.aws/amazonq/.cli_bash_history`,
`crates/chat-cli/src/util/paths.rs` `CLI_BASH_HISTORY`, appended by `input_source.rs` after
each line read from the terminal). A prompt given on the command line (`kiro-cli chat
--no-interactive "..."`, a delegate subagent, a script) is never read by the REPL and so never
lands there: a conversation prompt found in this file was typed by a person.

rustyline's file format: an optional first line `#V2`, after which every entry is one line with
`\\` and newline escaped (`\\\\`, `\\n`); without the header every line is one entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory_pipeline.tuning import KIRO_HISTORY_MAX_BYTES, KIRO_TYPED_PROMPT_MIN_CHARS

HISTORY_FILE = ".cli_bash_history"


def _unescape(line: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            nxt = line[i + 1]
            out.append("\n" if nxt == "n" else nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def normalise(text: str) -> str:
    return " ".join(text.split())


class TypedPrompts:
    """The typed prompts of every history file found under the given roots (read lazily, once
    per file version)."""

    def __init__(self, roots: list[Path]) -> None:
        self.paths = [Path(r) / HISTORY_FILE for r in roots]
        self._cache: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}

    def state_paths(self) -> list[Path]:
        return [p for p in self.paths if p.is_file()]

    def entries(self) -> frozenset[str]:
        found: set[str] = set()
        for path in self.paths:
            found |= self._read(path)
        return frozenset(found)

    def typed(self, prompts: list[str]) -> str | None:
        """The first of `prompts` found in the history (normalised), or None."""
        entries = self.entries()
        if not entries:
            return None
        for prompt in prompts:
            key = normalise(prompt)
            if len(key) >= KIRO_TYPED_PROMPT_MIN_CHARS and key in entries:
                return prompt
        return None

    def _read(self, path: Path) -> frozenset[str]:
        try:
            st = os.stat(path)
        except OSError:
            return frozenset()
        state = (st.st_size, st.st_mtime_ns)
        hit = self._cache.get(path)
        if hit and hit[0] == state:
            return hit[1]
        try:
            with open(path, "rb") as handle:
                if st.st_size > KIRO_HISTORY_MAX_BYTES:
                    handle.seek(st.st_size - KIRO_HISTORY_MAX_BYTES)
                raw = handle.read(KIRO_HISTORY_MAX_BYTES)
        except OSError:
            return frozenset()
        text = raw.decode("utf-8", errors="replace")
        lines = text.split("\n")
        v2 = bool(lines) and lines[0].strip() == "#V2"
        entries = {
            normalise(_unescape(line) if v2 else line) for line in (lines[1:] if v2 else lines)
        }
        entries.discard("")
        found = frozenset(entries)
        self._cache[path] = (state, found)
        return found
