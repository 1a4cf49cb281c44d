"""Cursor connector: the IDE's `state.vscdb` stores and the agent transcripts -> ParsedTask.

"FORMAT.md §x" refers to `FORMAT.md` beside this file: every field this package reads, what it
means and where it was learned (Cursor is closed source). Modules in data-flow order:

1. `sqlite`: read-only, lock-free reads of a `state.vscdb` (one WAL snapshot per parse).
2. `workspaces`: which workspace folder a composer belongs to; the oldest inline layout.
3. `bubbles`: bubbles -> complete turns (answer vs tool call vs thinking).
4. `transcripts`: `agent-transcripts/*.jsonl` of `cursor-agent` and the chat store's meta.
5. `ownership`: who a conversation belongs to, from native evidence.
6. `connector`: `CursorConnector` (discover, state_paths, task_days, parse) and `build`.
"""

from memory_pipeline.capture.cursor.connector import CursorConnector, build

__all__ = ["CursorConnector", "build"]
