"""Where the inbox is: MEMORY_INBOX_DIR (default MEMORY_HOME/inbox), or the demo corpus's inbox
when capture reads the demo corpus (a fresh machine's first `make run`)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from memory_pipeline.capture.sources import source_roots
from memory_pipeline.settings import DEMO_CORPUS, Settings

DEMO_INBOX = DEMO_CORPUS / "inbox"


def user_inbox(settings: Settings) -> Path:
    return settings.inbox_dir or settings.memory_home / "inbox"


def inbox_paths(settings: Settings) -> tuple[Path, Path]:
    """(the inbox directory, the cache of fetched URLs). The demo corpus's inbox goes with the
    demo corpus (MEMORY_SOURCES=demo, or auto with no agent history), unless the user's own
    inbox holds files."""
    from memory_pipeline.inbox.changes import has_files

    cache = settings.memory_home / "inbox-fetched"
    mine = user_inbox(settings)
    if settings.sources == "demo" or (
        settings.sources == "auto" and not has_files(mine) and source_roots(settings).kind == "demo"
    ):
        return DEMO_INBOX, cache
    return mine, cache


class InboxResource(dg.ConfigurableResource):
    """The inbox directory the inbox asset reads and the cache fetched URLs are kept in."""

    inbox_dir: str
    fetch_dir: str

    @classmethod
    def from_settings(cls, settings: Settings) -> InboxResource:
        inbox, cache = inbox_paths(settings)
        return cls(inbox_dir=str(inbox), fetch_dir=str(cache))
