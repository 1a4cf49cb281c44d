"""Kiro IDE connector: the agent chats in globalStorage `kiro.kiroagent` (pure parsing).

`layouts` describes and reads the two layouts (workspace-sessions JSON, per-execution `.chat`
snapshots with their execution logs); `connector` is `KiroIdeConnector`. Fields, sources and
fixtures: README.md beside this file.
"""

from memory_pipeline.capture.kiro_ide.connector import KiroIdeConnector, build

__all__ = ["KiroIdeConnector", "build"]
