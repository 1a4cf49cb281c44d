"""Privacy at capture: `<private>` markers, excluded tasks (MEMORY_EXCLUDE) and the private tier
(MEMORY_PRIVATE).

**Markers.** Text between `<private>` and `</private>` in anything captured (prompt, answer,
title, native context) is never stored: each outermost block becomes `[PRIVATE]` and is counted
like a redaction (kind `private`). Tags are matched in any case and with spaces inside the angle
brackets (`< PRIVATE >`, `</Private >`); an opening tag may carry attributes (`<private
reason="x">`). Blocks nest: the block ends at the closing tag that matches its opening one. An
opening tag that is never closed hides everything after it (when in doubt, store less). A
closing tag without an opening one hides nothing and stays as it is, so applying the rule twice
changes nothing.

**Rules.** MEMORY_EXCLUDE and MEMORY_PRIVATE hold comma- or newline-separated rules:

- `cwd:GLOB`: the task's working directory matches the glob (`~` expands), or lies under a
  directory that does (`cwd:~/clients/*` covers `~/clients/acme/api`);
- `repo:NAME`: the repository the task ran in: the last part of its git remote (`billing` of
  `https://github.com/acme/billing.git`, also `acme/billing`), else the cwd's last directory;
  compared case-insensitively, globs allowed;
- `source:KIND`: every task of one source (`codex`, `claude_code`, `chat_import`, ...: the
  names in memory_pipeline/models/sources.py), or every inbox document of one kind (`article`,
  `document`, `video`; memory_pipeline/models/inbox.py);
- `path:GLOB`: an inbox file whose path matches the glob or lies under a directory that does
  (`path:~/inbox/private/*`);
- `domain:NAME`: an inbox page or video whose URL's host is NAME or a subdomain of it
  (`domain:example.com` covers `blog.example.com`).

The inbox (memory_pipeline/inbox) applies the same rules to documents: an excluded document is
never stored (recorded as `excluded`), a private one's memories are private.

A task that moved (a Codex turn_context or Claude Code record with another cwd) reports every
directory it ran in (`cwds` of its native context): a `cwd:` rule matches any of them, and a
`repo:` rule also the last directory of each later one (its remote is not recorded).

An excluded task is not captured at all (recorded in `capture_skips` with reason `excluded` and
the rule that matched). A task that becomes excluded later (it moved into an excluded directory,
or the rule is new) stops capturing from then on and is recorded; the turns stored before stay
(stored turns never change; `forget --task` removes them). A private task is captured with
`private = true`, and the memories that rest on it are private (sql/019).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memory_pipeline.errors import UserError
from memory_pipeline.models.inbox import INBOX_KINDS
from memory_pipeline.models.sources import SOURCE_NAMES
from memory_pipeline.settings import Settings

PRIVATE_MARKER = "[PRIVATE]"
PRIVATE_KIND = "private"

_TAG = re.compile(r"<\s*(/)?\s*private\b[^<>]*>", re.IGNORECASE)

RuleKind = Literal["cwd", "repo", "source", "path", "domain"]
SOURCES = frozenset({*SOURCE_NAMES, *INBOX_KINDS})


def strip_private(text: str) -> tuple[str, int]:
    """The text with every `<private>` block replaced by the marker, and how many there were."""
    if "<" not in text:
        return text, 0
    out: list[str] = []
    depth = 0
    kept_from = 0  # where the text outside any block resumes
    blocks = 0
    for match in _TAG.finditer(text):
        closing = match.group(1) is not None
        if not closing:
            if depth == 0:
                out.append(text[kept_from : match.start()])
                out.append(PRIVATE_MARKER)
                blocks += 1
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                kept_from = match.end()
        # a closing tag outside any block: left in the text
    if depth == 0:
        out.append(text[kept_from:])
    return "".join(out), blocks


@dataclass(frozen=True)
class Rule:
    kind: RuleKind
    pattern: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.pattern}"

    def matches(self, source: str, native_context: dict[str, Any]) -> bool:
        if self.kind == "source":
            return source == self.pattern
        if self.kind in ("path", "domain"):  # inbox documents (memory_pipeline/inbox/store.py)
            value = native_context.get(self.kind) if isinstance(native_context, dict) else None
            if not isinstance(value, str) or not value:
                return False
            if self.kind == "path":
                return _cwd_matches(self.pattern, value)
            host, want = value.lower(), self.pattern.lower()
            return host == want or host.endswith("." + want) or fnmatch.fnmatchcase(host, want)
        cwd = native_context.get("cwd") if isinstance(native_context, dict) else None
        cwd = cwd if isinstance(cwd, str) and cwd else None
        later = _later_cwds(native_context, cwd)
        if self.kind == "cwd":
            return any(_cwd_matches(self.pattern, c) for c in ([cwd] if cwd else []) + later)
        names = _repo_names(native_context, cwd)
        names += [posixpath.basename(posixpath.normpath(c)).lower() for c in later]
        return any(fnmatch.fnmatchcase(n, self.pattern.lower()) for n in names)


def parse_rules(text: str | None, variable: str) -> list[Rule]:
    """Rules from a setting's value; a bad one stops with a line saying how to write it."""
    rules: list[Rule] = []
    for raw in re.split(r"[,\n]", text or ""):
        item = raw.strip()
        if not item:
            continue
        kind, sep, pattern = item.partition(":")
        kind, pattern = kind.strip().lower(), pattern.strip()
        if not sep or kind not in ("cwd", "repo", "source", "path", "domain") or not pattern:
            raise UserError(
                f"{variable}: {item!r} is not a rule; write cwd:GLOB, repo:NAME, source:KIND,"
                " path:GLOB or domain:NAME, separated by commas"
            )
        if kind == "source" and pattern not in SOURCES:
            raise UserError(
                f"{variable}: unknown source {pattern!r}; use one of {', '.join(sorted(SOURCES))}"
            )
        if kind in ("cwd", "path"):
            pattern = posixpath.normpath(_expand_home(pattern))
        rules.append(Rule(kind, pattern))  # type: ignore[arg-type]
    return rules


@dataclass(frozen=True)
class CaptureRules:
    """The exclusion and private-tier rules capture applies to every task."""

    exclude: tuple[Rule, ...] = ()
    private: tuple[Rule, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> CaptureRules:
        settings = settings or Settings.from_env()
        return cls(
            tuple(parse_rules(settings.memory_exclude, "MEMORY_EXCLUDE")),
            tuple(parse_rules(settings.memory_private, "MEMORY_PRIVATE")),
        )

    def excluded_by(self, source: str, native_context: dict[str, Any]) -> Rule | None:
        return next((r for r in self.exclude if r.matches(source, native_context)), None)

    def is_private(self, source: str, native_context: dict[str, Any]) -> bool:
        return any(r.matches(source, native_context) for r in self.private)


def _expand_home(pattern: str) -> str:
    return str(Path(pattern).expanduser()) if pattern.startswith("~") else pattern


def _cwd_matches(pattern: str, cwd: str) -> bool:
    path = posixpath.normpath(cwd)
    while True:
        if fnmatch.fnmatchcase(path, pattern):
            return True
        parent = posixpath.dirname(path)
        if parent == path:
            return False
        path = parent


def _later_cwds(native_context: dict[str, Any], first: str | None) -> list[str]:
    """The other directories a task moved to (`cwds` of its native context), if any."""
    cwds = native_context.get("cwds") if isinstance(native_context, dict) else None
    if not isinstance(cwds, list):
        return []
    return [c for c in cwds if isinstance(c, str) and c and c != first]


def _repo_names(native_context: dict[str, Any], cwd: str | None) -> list[str]:
    names: list[str] = []
    git = native_context.get("git") if isinstance(native_context, dict) else None
    url = git.get("repository_url") if isinstance(git, dict) else None
    if isinstance(url, str) and url.strip():
        tail = re.split(r"[/:]", url.strip().rstrip("/"))
        parts = [p for p in tail if p]
        if parts:
            name = parts[-1].removesuffix(".git")
            names.append(name.lower())
            if len(parts) > 1:
                names.append(f"{parts[-2]}/{name}".lower())
    elif cwd:
        names.append(posixpath.basename(posixpath.normpath(cwd)).lower())
    return names
