# ruff: noqa: E501  (the docstring holds the format table and JSONL example for the README)
"""Generic chat import: capture any exported conversation by dropping a JSONL file in a folder.

## The chat import format

Put files named `*.jsonl` anywhere under the configured import directory
(`<import_dir>/**/*.jsonl`). Each line is one JSON object: one message. A file may hold several
conversations ("tasks"); their lines may even interleave. Lines are read in file order, and that
order (not the timestamps) is the order of the messages.

| field | required | meaning |
|---|---|---|
| `task_id` | yes | The conversation this message belongs to (string). Unique across the whole import directory: the same `task_id` in a second file is a different conversation, kept apart under `<task_id> @ <file>` and recorded as a `task_conflict` (`capture/store.py`). |
| `text` | yes | The message text (non-empty string). |
| `timestamp` | yes | When the message was written, ISO 8601 (`2026-10-19T14:05:00+02:00`, `...Z`). A timestamp without an offset is read as UTC. |
| `role` | when `speaker` is absent | `"user"`, `"assistant"` or `"human"`. `"user"` and `"human"` are people, `"assistant"` is an AI. |
| `speaker` | no | Display name of whoever wrote the message (`"Mara"`, `"Jonas"`). |
| `title` | no | The conversation's title. It may appear on any line; the latest non-empty one wins. |
| `message_id` | no | The message's id in the system it was exported from (string or integer). |

Other fields are ignored. A line that is not a JSON object, lacks a required field or has a field of
the wrong type (or a timestamp that does not parse or cannot be converted to UTC, such as year 1
with a positive offset) is skipped and reported; the rest of the file is still imported.

**Turns.** Every message falls on one of two sides: the *prompt* side (whoever asks) or the
*outcome* side (whoever answers). A turn is one or more consecutive prompt-side messages followed by
one or more consecutive outcome-side messages; the next prompt-side message starts the next turn.

* If any message of the conversation has role `"assistant"`, the sides follow the roles: assistant
  messages are the outcome side, everything else is the prompt side. A message without a role
  counts as outcome side when its `speaker` also wrote an assistant message in that conversation.
* Otherwise (people talking to each other), the sides follow the speakers: the first speaker of the
  conversation is the prompt side and **every other speaker** is the outcome side. With two people
  that is "one asks, the other answers"; with three or more, the first speaker's messages are the
  prompts and the replies of everyone else together are the outcome. A message's speaker is its
  `speaker` field, or its `role` when it has no `speaker`.
* A last turn without any outcome-side message waits: it is not imported while the conversation is
  still going. Once the conversation has been quiet for `MEMORY_SEMANTIC_QUIET_MINUTES` (measured
  from its latest message `timestamp`, not from the file's modification time, so an export of an
  old conversation is quiet at once), it is imported as an **unanswered** turn: its prompt, an
  empty outcome, marked `unanswered`. Nothing said is left behind. If an answer (or more of the
  question) is appended to the file later, that turn is read again as usual; the stored
  unanswered turn never changes, and the complete turn is appended after it, repeating the
  question and naming the turn it answers (see `capture/store.py`). Outcome-side messages before
  the first prompt of a conversation cannot form a turn; they are skipped and reported
  (`outcome_without_prompt`).

**Damaged lines.** A line that cannot be read (cut off, not UTF-8, not JSON, a message with a bad
field) is skipped and recorded with its line number; it is never decoded with replacement
characters (its structure may be damaged too, and a damaged secret would escape redaction). It
may have held a message of either side, so the messages on each side of it are never joined
into one turn when they are on the same side: an answer after it, following an answer, is
recorded as `outcome_without_prompt` (its prompt may be the lost line); a prompt before it that
is followed by another prompt is not stored, recorded as `turn_damaged` (its answer may be the
lost line). Messages on different sides of one damaged line form turns as usual (at most the
lost message is missing from them); across two or more damaged lines (a whole exchange may be
lost) nothing is joined: the turn before them ends there (or, a prompt only, is not stored, as
above) and an answer after them is `outcome_without_prompt`. The damaged line counts for its own conversation when it still shows its
`task_id` (of a conversation of the file), else for every conversation it lies inside. In a conversation between people (the
speaker rule) a damaged line before its first message may have been that first message, which
decides who asks: no turn of it is stored, recorded once as `conversation_damaged`
(a damaged line that shows no `task_id` counts for every conversation that starts after it).

Every imported conversation is user-owned (the user put the file there). Its start time is its
earliest message timestamp.

A file is read as a stream, twice (a few facts per conversation, then the turns), and each
conversation is stored as soon as its last line is read; a very long one is stored in batches
(`CHAT_IMPORT_BATCH_CHARS`), so memory does not grow with the file. A file in which no line can
be read is recorded as one file skip (`no_task_found`, see `capture/unreadable.py`).

Example (a user/assistant export and a design review between two colleagues in one file):

```jsonl
{"task_id": "chat-0912", "title": "Postgres backups", "role": "user", "text": "pg_dump or pgBackRest for a 40 GB database?", "timestamp": "2026-09-12T19:02:11Z"}
{"task_id": "chat-0912", "role": "assistant", "text": "pgBackRest: incremental backups and point-in-time recovery.", "timestamp": "2026-09-12T19:02:30Z"}
{"task_id": "review-1019", "speaker": "Mara", "role": "human", "text": "Should rate limits move to Postgres?", "timestamp": "2026-10-19T14:05:00+02:00"}
{"task_id": "review-1019", "speaker": "Jonas", "text": "Yes, Redis evicted the counters last week.", "timestamp": "2026-10-19T14:06:40+02:00"}
```
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline import tuning
from memory_pipeline.capture.files import sort_candidates
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.models import (
    OwnershipVerdict,
    ParsedTask,
    ParsedTurn,
    ParseIssue,
    ParseResult,
    TaskTitle,
)
from memory_pipeline.capture.protocol import ConnectorOptions

ROLES = ("user", "assistant", "human")
OWNERSHIP_REASON = "chat_import:user-import"
TITLE_SOURCE = "chat_import:title"


@dataclass(frozen=True)
class _Message:
    line: int
    task_id: str
    role: str | None
    speaker: str | None
    text: str
    timestamp: datetime
    message_id: str | None
    title: str | None

    @property
    def who(self) -> str:
        """The speaker identity used by the speaker rule: `speaker`, else `role`."""
        return self.speaker if self.speaker is not None else (self.role or "")


class _LineError(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class ChatImportConnector:
    """Reads `<import_dir>/**/*.jsonl` in the chat import format (see the module docstring)."""

    source = "chat_import"

    def __init__(
        self,
        import_dir: Path,
        *,
        quiet_after: timedelta | None = timedelta(minutes=tuning.SEMANTIC_QUIET_MINUTES),
        now: Callable[[], datetime] | None = None,
    ) -> None:
        """`quiet_after`: how long after its latest message a conversation's unanswered last
        prompt is imported as an unanswered turn (None: never, it waits for an answer)."""
        self.import_dir = Path(import_dir)
        self.quiet_after = quiet_after
        self._now = now or (lambda: datetime.now(UTC))
        self._order: list[str] = []
        self.skipped_files: list[ParseIssue] = []  # of the last discover()

    def discover(self) -> list[Path]:
        """Every regular `*.jsonl` under the import directory; special files (a FIFO, a
        directory, a symlink out of it...) go to `skipped_files` (capture/files.py)."""
        self.skipped_files = []
        if not self.import_dir.is_dir():
            return []
        return sort_candidates(
            list(self.import_dir.rglob("*.jsonl")), self.import_dir, self.skipped_files
        )

    def task_days(self, path: Path) -> set[date]:
        """Never raises: the sensor and `memory-pipeline run` call it on every changed file
        before any job, so one bad file must not stop the planning of all the others."""
        read = JsonlRead(path=path)
        starts: dict[str, datetime] = {}
        try:
            for _line_no, msg in self._messages(path, read):
                first = starts.get(msg.task_id)
                if first is None or msg.timestamp < first:
                    starts[msg.task_id] = msg.timestamp
        except Exception:  # last resort; bad lines are already ParseIssues, not exceptions
            pass
        return {ts.date() for ts in starts.values()}

    def parse(self, path: Path) -> ParseResult:
        """Every task of the file at once (tests, fuzzing); capture uses `stream`."""
        read = JsonlRead(path=path)
        tasks = list(self.stream(path, read))
        first = {task_id: i for i, task_id in enumerate(self._order)}
        tasks.sort(key=lambda t: first.get(t.native_id, 0))  # stable: a task's batches stay
        return ParseResult(tasks=tasks, issues=read.issues)

    def stream(self, path: Path, read: JsonlRead) -> Iterator[ParsedTask]:
        """Yield each task as soon as its last line is read; bad lines go to `read.issues`.

        Two passes, so memory is bounded by a batch, not by the file: the first keeps a few
        facts per conversation (who answers, title, first and last time, last line), which the
        turn rules need before the first turn can be built; the second builds turns and hands a
        conversation on at its last line, a very long one in batches of about
        `CHAT_IMPORT_BATCH_CHARS` (`partial`). The second pass reads only the bytes the first
        read, so a line appended in between waits for the next run.
        """
        gaps = _Gaps()
        # Its issues are the second pass's too: not kept twice.
        survey = JsonlRead(path=path, on_skip=gaps.skipped_line)
        facts: dict[str, _Facts] = {}
        try:
            for _line_no, msg in self._messages(path, survey, gaps=gaps):
                known = facts.get(msg.task_id)
                if known is None:
                    facts[msg.task_id] = _Facts(msg)
                else:
                    known.add(msg)
        except Exception as exc:  # last resort: bad input must never stop the run
            read.issue("parser_error", f"{type(exc).__name__}: {exc}"[:500])
            return
        self._order = list(facts)  # first appearance, for `parse`
        gaps.settle(set(facts))
        if not facts:
            read.issues.extend(survey.issues)
            return
        import_file = self._import_file(path)
        now = self._now()
        open_tasks: dict[str, _Builder] = {}
        try:
            for _line_no, msg in self._messages(path, read, max_bytes=survey.size):
                fact = facts.get(msg.task_id)
                if fact is None or msg.line > fact.last_line:
                    continue  # appended after the first pass: the next run reads it
                builder = open_tasks.get(msg.task_id)
                if builder is None:
                    builder = open_tasks[msg.task_id] = _Builder(fact)
                    if fact.rule == "speakers":
                        builder.unsure_at = gaps.before(msg.task_id, msg.line)
                if builder.unsure_at is not None:
                    if msg.line == fact.last_line:  # no turn stored: recorded, at its start
                        del open_tasks[msg.task_id]
                        read.issues.append(_unsure(path, fact, builder.unsure_at))
                        builder.prompt, builder.outcome = [], []
                        yield self._task(path, import_file, builder, now, final=True)
                    continue
                try:
                    lost = gaps.between(msg.task_id, builder.last_line, msg.line)
                    builder.add(msg, path, read.issues, lost)
                    if msg.line == fact.last_line:
                        del open_tasks[msg.task_id]
                        yield self._task(path, import_file, builder, now, final=True)
                    elif builder.chars >= tuning.CHAT_IMPORT_BATCH_CHARS:
                        yield self._task(path, import_file, builder, now, final=False)
                except Exception as exc:  # last resort: one conversation, not the file
                    open_tasks.pop(msg.task_id, None)
                    facts.pop(msg.task_id, None)
                    read.issue(
                        "parser_error",
                        f"task {msg.task_id[:80]!r}: {type(exc).__name__}: {exc}"[:500],
                    )
        except Exception as exc:  # last resort: bad input must never stop the run
            read.issue("parser_error", f"{type(exc).__name__}: {exc}"[:500])

    # -- reading -----------------------------------------------------------------------------

    def _messages(
        self, path: Path, read: JsonlRead, max_bytes: int | None = None, gaps: _Gaps | None = None
    ):
        for line_no, obj in iter_jsonl(path, read, max_bytes=max_bytes):
            try:
                yield line_no, _message(line_no, obj)
            except _LineError as err:
                read.issue(err.reason, err.detail, line_no)
                if gaps is not None:
                    gaps.skipped_object(line_no, obj)

    def _import_file(self, path: Path) -> str:
        try:
            return Path(path).resolve().relative_to(self.import_dir.resolve()).as_posix()
        except (ValueError, OSError, RuntimeError):  # elsewhere, or a symlink loop
            return str(path)

    # -- turns -------------------------------------------------------------------------------

    def _task(
        self, path: Path, import_file: str, builder: _Builder, now: datetime, *, final: bool
    ) -> ParsedTask:
        """The builder's completed turns as a task (or a batch of one); at the end of the
        conversation, its last turn too: complete, unanswered (quiet long enough) or waiting."""
        fact = builder.fact
        unfinished = False
        settles_at: datetime | None = None
        if final:
            unfinished = bool(builder.prompt) and not builder.outcome
            if builder.prompt and builder.outcome:
                builder.close()
            if unfinished and self.quiet_after is not None:
                if now - fact.last_at >= self.quiet_after:
                    # Quiet long enough: nobody is going to answer soon. Keep what was said.
                    builder.turns.append(_unanswered_turn(builder.ordinal, builder.prompt))
                    builder.ordinal += 1
                    unfinished = False
                else:
                    settles_at = _plus(fact.last_at, self.quiet_after)
        turns, builder.turns, builder.chars = builder.turns, [], 0
        if not final:
            builder.batched = True
        return ParsedTask(
            source="chat_import",
            native_id=fact.task_id,
            started_at=fact.started_at,
            title=fact.title,
            ownership=OwnershipVerdict(
                ownership="user_owned",
                reason=OWNERSHIP_REASON,
                evidence={"import_file": import_file},
            ),
            native_context={
                "import_file": import_file,
                "turn_rule": fact.rule,
                "speakers": list(fact.speakers),
            },
            turns=turns,
            unfinished_turn=unfinished,
            settles_at=settles_at,
            source_path=str(path),
            partial=builder.batched,
        )


class _Facts:
    """What the turn rules need to know about a whole conversation before building its turns."""

    def __init__(self, msg: _Message) -> None:
        self.task_id = msg.task_id
        self.first_who = msg.who
        self.has_assistant = False
        self.agent_speakers: set[str] = set()
        self.speakers: dict[str, None] = {}
        self.title: TaskTitle | None = None
        self.started_at = self.last_at = msg.timestamp
        self.last_line = self.first_line = msg.line
        self.add(msg)

    def add(self, msg: _Message) -> None:
        if msg.role == "assistant":
            self.has_assistant = True
            if msg.speaker:
                self.agent_speakers.add(msg.speaker)
        if msg.speaker is not None:
            self.speakers.setdefault(msg.speaker)
        if msg.title:
            self.title = TaskTitle(text=msg.title, source=TITLE_SOURCE, observed_at=msg.timestamp)
        self.started_at = min(self.started_at, msg.timestamp)
        self.last_at = max(self.last_at, msg.timestamp)
        self.last_line = msg.line

    @property
    def rule(self) -> str:
        return "roles" if self.has_assistant else "speakers"

    def is_outcome(self, msg: _Message) -> bool:
        """Which side a message is on (see the module docstring, **Turns**)."""
        if self.has_assistant:
            return msg.role == "assistant" or (
                msg.role is None and msg.speaker in self.agent_speakers
            )
        return msg.who != self.first_who


_TASK_ID = re.compile(rb'"task_id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))')


class _Gaps:
    """Lines the reader skipped (damaged, or a message it could not read) and the conversation
    each probably belonged to: its `task_id` when the damaged line still shows one, else None
    (any conversation the line lies inside)."""

    def __init__(self) -> None:
        self.by_task: dict[str | None, list[int]] = {}

    def skipped_line(self, line: int, head: bytes) -> None:
        match = _TASK_ID.search(head)
        task_id: str | None = None
        if match is not None:
            raw = match.group(1) if match.group(1) is not None else match.group(2)
            try:
                value = json.loads(b'"' + raw + b'"') if match.group(1) is not None else raw
                task_id = (value.decode() if isinstance(value, bytes) else value).strip() or None
            except (ValueError, UnicodeDecodeError):
                task_id = None
        self.by_task.setdefault(task_id, []).append(line)

    def skipped_object(self, line: int, obj: dict[str, Any]) -> None:
        """A line that parsed but is no message (even one without text: it may have been the
        turn boundary between its neighbours)."""
        task_id = obj.get("task_id")
        known = isinstance(task_id, str | int) and not isinstance(task_id, bool)
        self.by_task.setdefault(str(task_id).strip() or None if known else None, []).append(line)

    def settle(self, task_ids: set[str]) -> None:
        """A damaged line whose `task_id` names no conversation of the file (the id itself may
        be damaged) counts for every conversation, as one that shows none."""
        strays = [k for k in self.by_task if k is not None and k not in task_ids]
        if strays:
            lines = self.by_task.get(None, [])
            for key in strays:
                lines += self.by_task.pop(key)
            self.by_task[None] = sorted(lines)

    def before(self, task_id: str, line: int) -> int | None:
        """The first skipped line of `task_id` (or of no known task) before `line`."""
        found = [
            lines[0]
            for lines in (self.by_task.get(task_id, ()), self.by_task.get(None, ()))
            if lines and lines[0] < line
        ]
        return min(found) if found else None

    def between(self, task_id: str, after: int, before: int) -> list[int]:
        """The skipped lines of `task_id` (or of no known task) strictly between two lines of
        that conversation, in order; none when it has no line before (nothing to join)."""
        if after <= 0:
            return []
        found: list[int] = []
        for lines in (self.by_task.get(task_id, []), self.by_task.get(None, [])):
            for at in lines[bisect_right(lines, after) :]:
                if at >= before:
                    break
                found.append(at)
                if len(found) > 2:  # two are enough to decide (`_Builder.add`)
                    break
        return sorted(found)


class _Builder:
    """One conversation's turns as its messages arrive; only unstored turns are held."""

    def __init__(self, fact: _Facts) -> None:
        self.fact = fact
        self.prompt: list[_Message] = []
        self.outcome: list[_Message] = []
        self.turns: list[ParsedTurn] = []
        self.ordinal = 0  # the next turn's ordinal in the whole conversation
        self.chars = 0  # text held in `turns`
        self.batched = False  # an earlier batch of this conversation was handed on
        self.last_line = 0  # the line of the conversation's previous message
        # A damaged line before the first message of a conversation between people: it may
        # have been the first message, which decides who asks. Such a conversation is not read.
        self.unsure_at: int | None = None

    def add(
        self, msg: _Message, path: Path, issues: list[ParseIssue], gaps: list[int] | None = None
    ) -> None:
        """`gaps`: skipped lines between the previous message and this one. One may have been a
        message of either side, so two neighbours on the same side are never joined across it;
        two or more may have been a whole exchange, so no neighbours are joined across them
        (the module docstring, **Damaged lines**)."""
        self.last_line = msg.line
        outcome = self.fact.is_outcome(msg)
        gap = gaps[0] if gaps else None
        whole = gaps is not None and len(gaps) > 1  # a prompt and its answer may be lost
        if gap is not None and self.outcome and (outcome or whole):
            self.close()  # answer, gap, answer: the gap may have been the next prompt
        elif gap is not None and self.prompt and not self.outcome and (not outcome or whole):
            for lost in self.prompt:  # prompt, gap, prompt: the gap may have been the answer
                issues.append(
                    ParseIssue(
                        path=str(path),
                        line=lost.line,
                        reason="turn_damaged",
                        detail=f"task {self.fact.task_id!r}: a prompt whose answer may be the"
                        f" damaged line {gap}; not stored",
                    )
                )
            self.prompt = []
        if outcome:
            if not self.prompt:
                where = (
                    f"after the damaged line {gap} (its prompt may be there)"
                    if gap is not None
                    else "before the first prompt"
                )
                issues.append(
                    ParseIssue(
                        path=str(path),
                        line=msg.line,
                        reason="outcome_without_prompt",
                        detail=f"task {self.fact.task_id!r}: an answer {where}",
                    )
                )
                return
            self.outcome.append(msg)
        else:
            if self.outcome:
                self.close()
            self.prompt.append(msg)

    def close(self) -> None:
        turn = _turn(self.ordinal, self.prompt, self.outcome)
        self.turns.append(turn)
        self.ordinal += 1
        self.chars += len(turn.prompt) + len(turn.outcome)
        self.prompt, self.outcome = [], []


def _unsure(path: Path, fact: _Facts, gap: int) -> ParseIssue:
    return ParseIssue(
        path=str(path),
        line=fact.first_line,
        reason="conversation_damaged",
        detail=f"task {fact.task_id!r}: the damaged line {gap} before its first message may"
        " have been that message, which decides who asks (the speaker rule); not stored",
    )


def _turn(ordinal: int, prompt: list[_Message], outcome: list[_Message]) -> ParsedTurn:
    return ParsedTurn(
        ordinal=ordinal,
        native_turn_id=next((m.message_id for m in prompt if m.message_id), None),
        prompt="\n\n".join(m.text for m in prompt),
        outcome="\n\n".join(m.text for m in outcome),
        started_at=prompt[0].timestamp,
        completed_at=outcome[-1].timestamp,
        native_message_ids=[m.message_id for m in (*prompt, *outcome) if m.message_id],
        prompt_speaker=_speakers(prompt),
        outcome_speaker=_speakers(outcome),
    )


def _unanswered_turn(ordinal: int, prompt: list[_Message]) -> ParsedTurn:
    """A last prompt nobody answered: an empty outcome, no completion time, marked."""
    return ParsedTurn(
        ordinal=ordinal,
        native_turn_id=next((m.message_id for m in prompt if m.message_id), None),
        prompt="\n\n".join(m.text for m in prompt),
        outcome="",
        started_at=prompt[0].timestamp,
        completed_at=None,
        native_message_ids=[m.message_id for m in prompt if m.message_id],
        prompt_speaker=_speakers(prompt),
        outcome_speaker=None,
        unanswered=True,
    )


def _plus(moment: datetime, delta: timedelta) -> datetime | None:
    try:
        return moment + delta
    except OverflowError:  # a last message in year 9999: it never settles
        return None


def _speakers(messages: list[_Message]) -> str | None:
    names = list(dict.fromkeys(m.speaker for m in messages if m.speaker))
    return ", ".join(names) if names else None


# -- one line ----------------------------------------------------------------------------------


def _message(line_no: int, obj: dict[str, Any]) -> _Message:
    task_id = _id_field(obj, "task_id", required=True)
    assert task_id is not None
    text = obj.get("text")
    if text is None:
        raise _LineError("missing_field", "no 'text'")
    if not isinstance(text, str):
        raise _LineError("bad_field", f"'text' is a {type(text).__name__}, not a string")
    if not text.strip():
        raise _LineError("missing_field", "'text' is empty")
    timestamp = _timestamp(obj.get("timestamp"))
    role = obj.get("role")
    if role is not None:
        if not isinstance(role, str) or role.strip().lower() not in ROLES:
            raise _LineError(
                "bad_field", f"'role' must be one of {', '.join(ROLES)}: {str(role)[:100]!r}"
            )
        role = role.strip().lower()
    speaker = _str_field(obj, "speaker")
    if role is None and speaker is None:
        raise _LineError("missing_field", "neither 'role' nor 'speaker'")
    title = _str_field(obj, "title")
    return _Message(
        line=line_no,
        task_id=task_id,
        role=role,
        speaker=speaker,
        text=text,
        timestamp=timestamp,
        message_id=_id_field(obj, "message_id", required=False),
        title=title,
    )


def _id_field(obj: dict[str, Any], name: str, *, required: bool) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise _LineError("missing_field", f"no {name!r}")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _LineError("bad_field", f"{name!r} is a {type(value).__name__}, not a string")
    value = str(value).strip()
    if not value:
        if required:
            raise _LineError("missing_field", f"{name!r} is empty")
        return None
    return value


def _str_field(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _LineError("bad_field", f"{name!r} is a {type(value).__name__}, not a string")
    return value.strip() or None


def _timestamp(value: Any) -> datetime:
    if value is None:
        raise _LineError("missing_field", "no 'timestamp'")
    if not isinstance(value, str):
        raise _LineError("bad_timestamp", f"'timestamp' is a {type(value).__name__}, not a string")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise _LineError("bad_timestamp", f"not ISO 8601: {value[:100]!r}") from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise _LineError("bad_timestamp", f"outside the range of UTC time: {value!r}") from None


def build(roots: list[Path], options: ConnectorOptions) -> ChatImportConnector:
    """The registry's factory (memory_pipeline/models/sources.py): one MEMORY_IMPORT_DIR."""
    return ChatImportConnector(roots[0], quiet_after=options.quiet_after)
