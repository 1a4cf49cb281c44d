"""Memory that arrives unasked: the agents' SessionStart and UserPromptSubmit hooks.

`memory-pipeline hook session-start` / `hook prompt` are thin clients (`client.py`, standard
library only) of a resident process (`server.py`) that keeps the read-only connection and the
embedding model warm: a cold Python process that imports psycopg, numpy and the model cannot
answer within the per-prompt deadline. The server builds the context pack (`inject.py`) for the
query the payload gives (`payload.py`, `query.py`). `install.py` merges the hook entries into
Claude Code's settings.json and Codex's hooks.json.

This package's `__init__` imports nothing: the client must stay cheap to start.
"""
