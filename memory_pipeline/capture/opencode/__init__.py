"""OpenCode connector: sessions from every storage generation OpenCode shipped -> ParsedTask.

1. `storage`: the guarded readers of the JSON files (legacy per-project and current layouts) and
   of the SQLite database, each into one `RawSession` shape; the change fingerprint of each.
2. `turns`: messages -> complete turns (typed prompt + final visible answer), ownership from
   native evidence, the title, provenance.
3. `connector`: `OpenCodeConnector` (discover, file_state, task_days, parse).
"""

from memory_pipeline.capture.opencode.connector import OpenCodeConnector

__all__ = ["OpenCodeConnector"]
