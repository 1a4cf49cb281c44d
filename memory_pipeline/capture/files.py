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
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

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
