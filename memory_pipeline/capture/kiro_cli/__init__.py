"""Kiro CLI connector (and its predecessor Amazon Q Developer CLI): pure parsing, no database.

Storage generations read (see README.md beside this file for fields, sources and fixtures):

1. `data.sqlite3` table `conversations` (Amazon Q Developer CLI >= 1.10, 2025-05; key = the
   directory, one conversation each), history as `[user, assistant]` pairs before 2025-07-22 and
   as `{user, assistant, request_metadata}` entries after (`conversation.py`);
2. `data.sqlite3` table `conversations_v2` (Kiro CLI agent engine v1; every conversation of a
   directory, `created_at`/`updated_at` ms) (`sqlite.py`);
3. `~/.kiro/sessions/cli/<id>.jsonl` + `<id>.json` (Kiro CLI agent engine v2) (`sessions.py`).

`typed` reads the REPL history that proves a prompt was typed; `ownership` decides the owner;
`connector` is `KiroCliConnector` (discover, state_paths, task_days, parse).
"""

from memory_pipeline.capture.kiro_cli.connector import KiroCliConnector, build

__all__ = ["KiroCliConnector", "build"]
