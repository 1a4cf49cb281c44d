"""Streaming JSON Lines reader shared by every connector.

Transcript files can be hundreds of megabytes and may be appended to while we read them. The
reader never loads a file whole, reads only up to the size the file had when it was opened (so a
concurrent append cannot hand us half a line), and turns every bad line into a ParseIssue instead
of an exception: the caller decides what a skipped line means, the run goes on. That includes a
line nested so deep that the JSON decoder runs out of stack (`too_deep`: json.loads raises
RecursionError, not JSONDecodeError), and a UTF-8 byte order mark before a line, which editors
and Windows tools write and which is not part of the record (tolerated, not an issue).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.tuning import CAPTURE_SKIPPED_HEAD_BYTES

# A single line longer than this is skipped (recorded), not parsed: no legitimate transcript record
# needs it and json.loads on it would hold several copies in memory.
MAX_LINE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
# Issues for which the reader skipped a whole line (what it held is lost to the connector).
SKIPPED_LINE_REASONS = frozenset(
    {"binary", "invalid_json", "truncated_line", "too_deep", "line_too_long"}
)


@dataclass
class JsonlRead:
    """Records of one pass over a file plus what was skipped on the way."""

    path: Path
    issues: list[ParseIssue] = field(default_factory=list)
    lines_read: int = 0
    size: int = 0  # the bytes the pass read up to (the file's size when it was opened)
    # Called with (line number, first CAPTURE_SKIPPED_HEAD_BYTES bytes) of every line the reader
    # skips, so a connector can tell which task a damaged line probably belonged to.
    on_skip: Callable[[int, bytes], None] | None = None

    def issue(self, reason: str, detail: str = "", line: int | None = None) -> None:
        self.issues.append(ParseIssue(path=str(self.path), line=line, reason=reason, detail=detail))

    def skipped(self, line: int, raw: bytes) -> None:
        if self.on_skip is not None:
            self.on_skip(line, raw[:CAPTURE_SKIPPED_HEAD_BYTES])


def iter_jsonl(
    path: Path, read: JsonlRead, max_bytes: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) for every JSON object line of `path`.

    Skipped lines and file-level problems are appended to `read.issues`. A last line without a
    newline is accepted only if it parses (a writer may be mid-line); otherwise it is reported as
    `truncated_line` and left for a later run. `max_bytes`: read no further (a second pass reads
    exactly what a first pass read).
    """
    try:
        # O_NONBLOCK: a FIFO put in the file's place after discovery looked must not block the
        # run (discovery never lists one, capture/files.py); it is refused just below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        read.issue("unreadable", f"{type(exc).__name__}: {exc.strerror or exc}")
        return
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        read.issue("not_a_regular_file", "not a regular file; not read")
        return
    fh = os.fdopen(fd, "rb")
    try:
        st = os.fstat(fh.fileno())
        limit = st.st_size if max_bytes is None else min(st.st_size, max_bytes)
        read.size = limit
        if limit == 0:
            read.issue("empty_file")
            return
        consumed = 0
        line_no = 0
        buf = b""
        skipping_long = False
        while consumed < limit:
            chunk = fh.read(min(_CHUNK, limit - consumed))
            if not chunk:
                read.issue("changed_while_reading", "file shrank while it was read")
                break
            consumed += len(chunk)
            buf += chunk
            # Scan by offset and cut the buffer once per chunk: re-slicing the rest of the buffer
            # after every line made each chunk quadratic in its number of lines.
            start = 0
            while True:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    break
                raw, start = buf[start:nl], nl + 1
                line_no += 1
                if skipping_long:
                    skipping_long = False
                    continue
                obj = _decode(raw, line_no, read)
                if obj is not None:
                    yield line_no, obj
            buf = buf[start:]
            if len(buf) > MAX_LINE_BYTES:
                if not skipping_long:
                    read.issue("line_too_long", f"> {MAX_LINE_BYTES} bytes", line_no + 1)
                    read.skipped(line_no + 1, buf)
                skipping_long = True
                buf = b""
        if buf and not skipping_long:
            line_no += 1
            obj = _decode(buf, line_no, read, last_line=True)
            if obj is not None:
                yield line_no, obj
        read.lines_read = line_no
        after = _stat_or_none(path)
        if after is not None and (after.st_size < st.st_size or after.st_ino != st.st_ino):
            read.issue("changed_while_reading", "file was replaced or truncated during the read")
    except OSError as exc:
        read.issue("unreadable", f"{type(exc).__name__}: {exc.strerror or exc}")
    finally:
        fh.close()


def _decode(raw: bytes, line_no: int, read: JsonlRead, last_line: bool = False) -> dict | None:
    raw = raw.strip()
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :].lstrip()
    if not raw:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        # Skipped, not decoded with replacement characters: a line whose bytes are damaged may
        # be damaged in its structure too, and a secret with one bad byte would no longer match
        # the redaction rules. The connector decides what the gap means for the turn around it.
        read.issue("binary", "line is not UTF-8", line_no)
        read.skipped(line_no, raw)
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        reason = "truncated_line" if last_line else "invalid_json"
        read.issue(reason, exc.msg, line_no)
        read.skipped(line_no, raw)
        return None
    except RecursionError:
        read.issue("too_deep", "JSON nested deeper than the decoder can follow", line_no)
        read.skipped(line_no, raw)
        return None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        read.issue("invalid_json", str(exc)[:200], line_no)
        read.skipped(line_no, raw)
        return None
    if not isinstance(obj, dict):
        read.issue("invalid_json", f"line is a JSON {type(obj).__name__}, not an object", line_no)
        read.skipped(line_no, raw)
        return None
    return obj


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
