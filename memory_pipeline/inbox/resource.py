"""Where the inbox is: MEMORY_INBOX_DIR (default MEMORY_HOME/inbox), or the demo corpus's inbox
when capture reads the demo corpus (a fresh machine's first `make run`)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from memory_pipeline.capture.sources import source_roots
from memory_pipeline.settings import DEMO_CORPUS, Settings

DEMO_INBOX = DEMO_CORPUS / "inbox"


def inbox_paths(settings: Settings) -> tuple[Path, Path]:
    """(the inbox directory, the cache of fetched URLs)."""
    cache = settings.memory_home / "inbox-fetched"
    if settings.sources == "demo" or (
        settings.sources == "auto" and source_roots(settings).kind == "demo"
    ):
        return DEMO_INBOX, cache
    return settings.inbox_dir or settings.memory_home / "inbox", cache


class InboxResource(dg.ConfigurableResource):
    """The inbox directory the inbox asset reads and the cache fetched URLs are kept in."""

    inbox_dir: str
    fetch_dir: str

    @classmethod
    def from_settings(cls, settings: Settings) -> InboxResource:
        inbox, cache = inbox_paths(settings)
        return cls(inbox_dir=str(inbox), fetch_dir=str(cache))
