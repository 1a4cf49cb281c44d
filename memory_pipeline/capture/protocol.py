"""The connector protocol: what every source of agent tasks implements (one package each).

A connector reads one agent's native files and returns the models of `capture/models.py`. It
never touches the database, redacts, hashes or decides what is stored: the capture store
(`capture/store.py`) does that once for every source (monotonic append, drift, renames,
`<private>`, exclusions, tombstones), and change detection (`capture/changes.py`) and ingest
(`capture/ingest.py`) call the connector only through this protocol. Sources are registered in
`memory_pipeline/models/sources.py` (`SOURCES`): name, display name, roots and their override
variables, demo roots, and the factory `build(roots, options) -> Connector`.

Methods (`Connector`):

* `discover()`: every file under the connector's roots that it owns (one file = one unit of
  change detection and of capture), sorted; never follows a symlink out of a root and never
  opens a special file: pass candidates through `capture.files.sort_candidates`, which keeps
  the others in `self.skipped_files` (recorded once as `not_a_regular_file` /
  `symlink_outside_source`). A missing root is no error: return []. A store that is one file
  (a SQLite database) is one path here; so is each session file.
* `task_days(path)`: the UTC start day of each task in the file, cheaply (a peek, stopping as
  early as it can), by the same rule `parse` uses for `started_at`, so both agree. Never raises.
* `parse(path)`: stream the file (never read a large file whole), return every task with its
  complete turns only (the prompt and the final visible answer; no tool calls, reasoning or
  injected context), an unfinished last turn flagged (`unfinished_turn`, it waits), and every
  skipped part as a `ParseIssue` (bad bytes isolated per line/record/file; `line` when known).
  Never raises for bad input: a connector's own bug is caught by ingest (`parser_error`), but
  bad input must never get that far. A connector may add `stream(path, read)` (the chat import)
  to yield tasks while ingest stores them.

Ownership (`ParsedTask.ownership`): decided from native evidence only, delegation evidence wins
(a subagent, a headless `-p`/`exec`/`run`, automation), `unknown` when nothing says (skipped
and recorded with its reason, `capture skips` lists it). Reason codes are
`<source>:<evidence>` in kebab case: `codex:subagent`, `claude_code:typed-prompt`,
`gemini_cli:non-interactive`; `evidence` holds the native fields verbatim (never account ids).

Naming (`ParsedTask.title`): the native name with its provenance (`<source>:<field>`); a rename
is a new title, kept as presentation provenance by the store. A name kept outside the transcript
files (Codex's session index) makes the connector also implement `NamesOutsideTranscripts`.

Identity: `(source, native_id)` is the task; `native_context` keeps cwd, repository, branch,
model, version... as provenance only. Turn ordinals are 0-based in native order; the store
appends only what is beyond what it has (drift in stored turns is ignored and counted).

Change detection: a file's version is its (size, mtime_ns). A store that changes without its
main file changing (SQLite in WAL mode writes `<db>-wal`; a session whose messages live in a
sibling directory) implements `StateOutsideTranscripts.state_paths(path)`: every path whose
stat makes up the file's version (the file itself included); the version is then the sum of the
sizes and the newest mtime. A file rewritten whole (one JSON document per session) is read
whole, but a torn read (the file changed while it was read) must be one `changed_while_reading`
issue and no task, never a half document.

Obligations of a new connector (CONNECTORS.md): fixtures written the way the agent writes them,
with version, source and license recorded; tests of each format generation, the ownership
matrix, append and drift, rename, unfinished turn, bad records, a change while reading,
exclusion and forget; a README sources row and ownership-table rows; a fuzz target in
`scripts/fuzz_capture.py`; demo sessions in `memory_pipeline/demo/`.

Shared pieces (below, and CONNECTORS.md "Shared helpers"): `root_list`, `discover_candidates`,
`days_by_parse`, `guarded_parse`, `issue`; files in `capture/files.py` (`read_json_document`,
`list_dir`), SQLite stores in `capture/sqlite_store.py` (`connect_ro`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable

from memory_pipeline import tuning
from memory_pipeline.capture.models import ParseIssue, ParseResult

FileState = tuple[int, int]  # (size, mtime_ns) of a file on disk, or of a store's paths together


@dataclass(frozen=True)
class ConnectorOptions:
    """What capture's settings give every connector factory besides its roots."""

    # The chat import's quiet rule: an unanswered last prompt is captured after it.
    quiet_after: timedelta | None = timedelta(minutes=tuning.SEMANTIC_QUIET_MINUTES)


class Connector(Protocol):
    """A source of agent tasks. One package per integration implements it (see above)."""

    source: str  # a name registered in memory_pipeline/models/sources.py
    # The special files the last discover() passed over (capture/files.py), recorded once.
    skipped_files: list[ParseIssue]

    def discover(self) -> list[Path]:
        """Every file under this connector's configured roots that it owns, sorted."""
        ...

    def task_days(self, path: Path) -> set[date]:
        """Cheap peek: the UTC start day of each task in the file (no full parse if avoidable)."""
        ...

    def parse(self, path: Path) -> ParseResult:
        """Stream the file (never load it whole) and return its tasks and skipped parts."""
        ...


@runtime_checkable
class NamesOutsideTranscripts(Protocol):
    """A connector whose task names live outside the transcript files (Codex's session index):
    a rename changes no transcript's mtime, so change detection asks it separately."""

    def renamed_since(self, since_ns: int) -> tuple[set[Path], int]:
        """Files of tasks renamed after `since_ns` (epoch ns), and the newest mtime involved."""
        ...


@runtime_checkable
class StateOutsideTranscripts(Protocol):
    """A connector whose file's content also changes through other paths (a SQLite database's
    `-wal` file, a session's message directory): change detection stats all of them."""

    def state_paths(self, path: Path) -> list[Path]:
        """Every path whose stat makes up `path`'s version, `path` itself included."""
        ...


def file_state(connector: object, path: Path) -> FileState | None:
    """The version of a discovered file: (size, mtime_ns), or, for a connector with
    `state_paths`, the sum of the sizes and the newest mtime of those that exist. None when
    the file itself is gone. Never raises for a connector bug in `state_paths` (the file's own
    stat is used)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    state = (st.st_size, st.st_mtime_ns)
    if not isinstance(connector, StateOutsideTranscripts):
        return state
    try:
        paths = [Path(p) for p in connector.state_paths(Path(path))]
    except Exception:
        return state
    size, mtime = 0, 0
    for p in dict.fromkeys([Path(path), *paths]):
        try:
            other = os.stat(p)
        except OSError:
            continue
        size += other.st_size
        mtime = max(mtime, other.st_mtime_ns)
    return (size, mtime)


def one_line(exc: BaseException) -> str:
    """`Type: message` of an exception on one line, bounded, for a recorded issue or skip."""
    try:
        text = " ".join(str(exc).split())
    except Exception:  # a message that cannot even be rendered
        text = "(unprintable message)"
    return f"{type(exc).__name__}: {text}"[:500]


# --- shared pieces of every connector (CONNECTORS.md "Shared helpers") ---------------------------


def issue(path: Path | str, reason: str, detail: str = "", line: int | None = None) -> ParseIssue:
    """A ParseIssue for `path`, its detail bounded to 500 characters."""
    return ParseIssue(path=str(path), line=line, reason=reason, detail=detail[:500])


def root_list(roots: list[Path] | Path) -> list[Path]:
    """A connector's roots as a list of Paths (one root may be given alone)."""
    return [Path(r) for r in (roots if isinstance(roots, list) else [roots])]


def discover_candidates(
    roots: list[Path], candidates: Callable[[Path], Iterable[Path]], skipped: list[ParseIssue]
) -> list[Path]:
    """`discover()`'s loop: each root's `candidates(root)` through `files.sort_candidates`
    (special files go to `skipped`), all roots' together, sorted and without repeats."""
    from memory_pipeline.capture.files import sort_candidates

    found: list[Path] = []
    for root in roots:
        found += sort_candidates(list(candidates(root)), root, skipped)
    return sorted(set(found))


def days_by_parse(parse: Callable[[Path], ParseResult], path: Path) -> set[date]:
    """`task_days()` for a connector whose file is small enough that parse is the peek: the UTC
    start day of every task `parse(path)` returns (so both agree by construction). Never raises."""
    try:
        return {t.started_at.astimezone(UTC).date() for t in parse(path).tasks}
    except Exception:
        return set()


def guarded_parse(parse: Callable[[Path], ParseResult], path: Path) -> ParseResult:
    """`parse()`'s last-resort guard: a connector bug on some input is one `parser_error` issue
    for the file (`Type: message`), never an exception out of parse()."""
    from memory_pipeline.capture.codex.fields import exception_detail

    try:
        return parse(path)
    except Exception as exc:
        return ParseResult(issues=[issue(path, "parser_error", exception_detail(exc))])
