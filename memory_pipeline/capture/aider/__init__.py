"""Aider connector: `.aider.chat.history.md` in named repositories and searched roots.

1. `history`: the file's lines -> sessions (`# aider chat started at`), turns (typed `#### `
   prompts and the answer after them; blockquoted tool lines dropped), ownership from the
   logged command line, prompt times from `.aider.input.history`.
2. `connector`: `AiderConnector` (discover, state_paths, task_days, parse).
"""

from memory_pipeline.capture.aider.connector import AiderConnector

__all__ = ["AiderConnector"]
