"""Codex CLI connector: rollout files under CODEX_HOME -> ParsedTask (pure parsing, no database).

"Notes §x" in this package refers to the researched format description, `transcript-formats.md`
section 1 (OpenAI Codex CLI). One parse, module by module:

1. `records`: the guarded read of a rollout's lines, session metas, the thread's start rule
   (shared by `task_days()` and `parse()`, so they always agree).
2. `normalise`: records of every envelope generation -> one internal event stream; every field's
   type is checked here (the trust boundary), wrong types and unusable times are recorded.
3. `reduce`: events -> turns (notes §1.9), forks (notes §1.3); each line is isolated, so one bad
   record is a `bad_record` issue, never a lost session.
4. `ownership`: the thread's owner from native evidence only (notes §1.4).
5. `naming`: the task name from the state DB, `session_index.jsonl` or rename events.
6. `connector`: `CodexConnector` (discover, renamed_since, task_days, parse).

`fields` and `text` are the leaf helpers (ids, times, bounded JSON; prompt and answer text).
"""

from memory_pipeline.capture.codex.connector import CodexConnector

__all__ = ["CodexConnector"]
