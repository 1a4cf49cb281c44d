"""Claude Code source connector: one Captured Task per session file, side threads classified.

Pure parsing: reads `<claude_home>/projects/**.jsonl` (and `history.jsonl` for ownership) and
returns `ParsedTask`s. Section references (§2.x, §3) are to `shared/notes/transcript-formats.md`.
One module per step, each with the rules it implements where the notes leave a choice:

* `records.py`: what is kept of a line (typed values only) and the record vocabulary.
* `load.py`: one streamed pass over the JSONL; each line is interpreted on its own, so a bad
  line (wrong JSON types, an unusable timestamp, any exception) costs that line and is recorded.
* `chain.py`: the live leaf, rewinds, the walk up the tree, and breaks where an unreadable
  record may have been a prompt.
* `turns.py`: cycles, outcomes, end markers, completion and turn identity.
* `ownership.py`: session ownership, `history.jsonl`, side-thread classification.
* `naming.py`: titles.
* `connector.py`: `ClaudeCodeConnector` (discover, task_days, parse).
"""

from memory_pipeline.capture.claude_code.connector import DEFAULT_SETTLE_AFTER, ClaudeCodeConnector
from memory_pipeline.capture.claude_code.ownership import is_side_thread
from memory_pipeline.capture.claude_code.records import SOURCE, parse_timestamp

__all__ = [
    "DEFAULT_SETTLE_AFTER",
    "SOURCE",
    "ClaudeCodeConnector",
    "is_side_thread",
    "parse_timestamp",
]
