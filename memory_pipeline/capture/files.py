"""Which files under a source root capture may open: regular files only, never a special one.

Opening a FIFO for reading blocks until a writer comes (forever, for a run); `/dev/zero` never
ends; a socket or a directory cannot be read as lines; a symlink out of the source tree reads a
file the user did not put there. Discovery therefore looks at every candidate name with `lstat`
(and `stat` of a symlink's target) before anything opens it, keeps regular files (and symlinks to
regular files inside the same root), and returns each other one as a file skip:

* `not_a_regular_file`: a FIFO, socket, device, directory or dangling symlink with a transcript's
  name;
* `symlink_outside_source`: a symlink whose target lies outside the source root (a device such as
  `/dev/zero` included).

The caller records them in `capture_skips` (once: the same row on every run). The shared reader
opens with O_NONBLOCK and checks the opened file again, for a file replaced between the two.

`read_json_document(path, max_bytes)` reads a file that is one JSON document (a Gemini CLI
legacy session, a Kiro session sidecar or IDE session), whole and size-capped, stat'ed before and
after: a file rewritten meanwhile is one `changed_while_reading` issue and no value, never half
a document.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from memory_pipeline.capture.models import ParseIssue

NOT_A_REGULAR_FILE = "not_a_regular_file"  # capture_skips reason (kind 'file')
SYMLINK_OUTSIDE_SOURCE = "symlink_outside_source"  # capture_skips reason (kind 'file')


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def special_file(path: Path, root: Path) -> ParseIssue | None:
    """None when `path` may be opened (a regular file, or a symlink to one inside `root`), else
    the file skip saying why not. Never opens `path`; a name that vanished is None (not listed
    again by the caller's next look)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = Path(path).resolve(strict=True)
            inside = target.is_relative_to(Path(root).resolve())
            st = os.stat(target)
        except (OSError, RuntimeError):  # dangling, or a loop
            return _issue(path, NOT_A_REGULAR_FILE, "a symlink to nothing")
        if not inside:
            what = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
            return _issue(path, SYMLINK_OUTSIDE_SOURCE, f"a symlink to {what} at {target}")
        if stat.S_ISREG(st.st_mode):
            return None
        return _issue(path, NOT_A_REGULAR_FILE, f"a symlink to {_kind(st.st_mode)}")
    return _issue(path, NOT_A_REGULAR_FILE, _kind(st.st_mode))


def _issue(path: Path, reason: str, detail: str) -> ParseIssue:
    return ParseIssue(path=str(path), reason=reason, detail=f"{detail}; never opened"[:500])


def list_dir(directory: Path) -> list[Path]:
    """The entries of `directory`, sorted; [] when it cannot be listed (gone, not a directory,
    no permission): discovery looks again next time."""
    try:
        return sorted(directory.iterdir())
    except OSError:
        return []


def sort_candidates(candidates: list[Path], root: Path, skipped: list[ParseIssue]) -> list[Path]:
    """The candidates that may be opened, sorted; the others appended to `skipped`."""
    found: set[Path] = set()
    for path in candidates:
        issue = special_file(path, root)
        if issue is None:
            found.add(path)
        elif all(s.path != issue.path for s in skipped):
            skipped.append(issue)
    skipped.sort(key=lambda s: s.path)
    return sorted(found)


def skipped_files(connector: object) -> list[ParseIssue]:
    """The special files a connector's last `discover()` passed over (none if it keeps none)."""
    found = getattr(connector, "skipped_files", None)
    return list(found) if isinstance(found, list) else []


def read_json_document(path: Path, max_bytes: int) -> tuple[Any, ParseIssue | None]:
    """The JSON document in `path`, read whole: (value, None), or (None, the issue why).

    Issues: `empty_file`, `too_large` (over `max_bytes`), `unreadable`, `changed_while_reading`
    (the file's size or mtime moved during the read: the next look reads it again), `binary`
    (NUL bytes), `too_deep`, `invalid_json`. A UTF-8 byte order mark is ignored. Opened with
    O_NONBLOCK (never blocks on a FIFO put there after discovery)."""
    from memory_pipeline.capture.codex.fields import exception_detail  # codex imports this module

    try:
        before = os.stat(path)
        if before.st_size == 0:
            return None, _doc_issue(path, "empty_file")
        if before.st_size > max_bytes:
            return None, _doc_issue(path, "too_large", f"{before.st_size:,} bytes")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(max_bytes + 1)
        after = os.stat(path)
    except OSError as exc:
        return None, _doc_issue(path, "unreadable", exception_detail(exc))
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(
        raw
    ) != before.st_size:
        return None, _doc_issue(path, "changed_while_reading", "the file changed while it was read")
    if b"\x00" in raw:
        return None, _doc_issue(path, "binary", "NUL bytes in a JSON document")
    try:
        return json.loads(raw.removeprefix(b"\xef\xbb\xbf")), None
    except RecursionError:
        return None, _doc_issue(path, "too_deep", "the document nests too deep")
    except (ValueError, TypeError) as exc:  # JSONDecodeError, UnicodeDecodeError: a torn write
        return None, _doc_issue(path, "invalid_json", exception_detail(exc))


def _doc_issue(path: Path, reason: str, detail: str = "") -> ParseIssue:
    return ParseIssue(path=str(path), reason=reason, detail=detail[:500])
