"""Gemini CLI connector: `~/.gemini/tmp/<project>/chats/` session files (legacy `session-*.json`
documents and `session-*.jsonl` logs, subagents' logs beside them) -> ParsedTask.

See `connector.py` (roots, layout), `records.py` (the formats), `turns.py` (what a turn is),
`projects.py` (project roots, typed prompts) and `ownership.py`.
"""

from memory_pipeline.capture.gemini_cli.connector import GeminiCliConnector, build

__all__ = ["GeminiCliConnector", "build"]
