"""`memory-pipeline add URL…` and `memory-pipeline inbox list | forget`: the inbox (issue 33)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

inbox_app = typer.Typer(
    help="The inbox: web articles, documents and video transcripts stored as sources.",
    no_args_is_help=True,
)
app.add_typer(inbox_app, name="inbox")

ADDED_LIST = "added.url"  # the inbox's list of URLs given to `add`


@app.command("add")
def add(
    urls: Annotated[list[str], typer.Argument(help="Web pages (or YouTube videos) to remember.")],
    no_fetch: Annotated[
        bool, typer.Option("--no-fetch", help="Only list them; the next run fetches them.")
    ] = False,
) -> None:
    """Add URLs to the inbox and fetch them now (timeout and size cap); the next
    `memory-pipeline run` (or the inbox sensor under `make ui`) stores them as sources."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.connection import connect
    from memory_pipeline.inbox import fetch as fetching
    from memory_pipeline.inbox.resource import inbox_paths, user_inbox
    from memory_pipeline.inbox.store import read_url_list
    from memory_pipeline.models.inbox import INBOX_KINDS

    settings = Settings.from_env()
    _, cache = inbox_paths(settings)
    inbox = user_inbox(settings)  # never the demo corpus's
    checked = []
    for url in urls:
        try:
            checked.append(fetching.check_url(url))
        except fetching.FetchError as exc:
            raise UserError(str(exc)) from None
    db = ensure_ready(settings)
    with connect(db.app, autocommit=True) as conn:
        forgotten = {
            r[0]
            for r in conn.execute(
                "SELECT native_id FROM forgotten_tasks WHERE source = ANY(%s)"
                " AND native_id = ANY(%s)",
                [list(INBOX_KINDS), checked],
            ).fetchall()
        }
    inbox.mkdir(parents=True, exist_ok=True)
    listed_file = inbox / ADDED_LIST
    listed = set(read_url_list(listed_file)) if listed_file.is_file() else set()
    failures = 0
    for url in checked:
        if url in forgotten:
            say(f"{url}: forgotten before; not added (`memory-pipeline forget --log` lists it)")
            failures += 1
            continue
        if url not in listed:
            with listed_file.open("a", encoding="utf-8") as fh:
                fh.write(url + "\n")
            listed.add(url)
        if no_fetch:
            say(f"{url}: listed; the next run fetches it")
            continue
        try:
            if fetching.is_youtube(url):
                body = fetching.fetch_with_ytdlp(url, cache)
                if body is None:
                    say(f"{url}: listed, waiting: install yt-dlp (pip install -e '.[video]')")
                    continue
                say(f"{url}: subtitles fetched")
            else:
                fetched = fetching.fetch(url)
                fetching.save(fetched, cache)
                say(f"{url}: fetched {len(fetched.body):,} bytes ({fetched.content_type})")
        except fetching.FetchError as exc:
            failures += 1
            say(f"{exc}")
    say("stored as sources by the next `memory-pipeline run` (or within a minute under `make ui`)")
    if failures == len(checked):
        raise typer.Exit(1)


@inbox_app.command("list")
def list_sources(
    include_missing: Annotated[
        bool, typer.Option("--missing", help="Only documents whose file was deleted.")
    ] = False,
) -> None:
    """Stored documents: kind, passages, revisions, locator (URL or path), title."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.connection import connect

    db = ensure_ready(Settings.from_env())
    with connect(db.app, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT kind, passages, revisions, locator, title, missing_since IS NOT NULL"
            " FROM inbox_sources WHERE (NOT %s OR missing_since IS NOT NULL)"
            " ORDER BY kind, first_seen_at, locator",
            [include_missing],
        ).fetchall()
        skipped = conn.execute(
            "SELECT source, path, reason, detail FROM capture_skips WHERE kind = 'file'"
            " AND source IN ('article', 'document', 'video') ORDER BY first_seen_at"
        ).fetchall()
    if not rows:
        say("the inbox holds no document yet")
    for kind, n, revisions, locator, title, missing in rows:
        note = "  (file deleted: `inbox forget` removes it)" if missing else ""
        typer.echo(f"{kind:8} {n:3} passages  rev {revisions}  {locator}  {title}{note}")
    if skipped and not include_missing:
        say(f"{len(skipped)} inbox file(s) or URL(s) not stored:")
        for source, path, reason, detail in skipped:
            typer.echo(f"  {source}  {reason}  {path}  {detail}")


@inbox_app.command("forget")
def forget_source(
    locator: Annotated[str, typer.Argument(help="The URL or file path `inbox list` shows.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask before forgetting.")] = False,
) -> None:
    """Forget a document for good: its passages, memories and edges; a tombstone keeps it (and
    its URL) from being stored or fetched again."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.connection import connect
    from memory_pipeline.inbox.forget import find_document, forget_document, forget_unstored
    from memory_pipeline.inbox.resource import inbox_paths
    from memory_pipeline.inbox.store import discover, read_url_list

    settings = Settings.from_env()
    db = ensure_ready(settings)
    with connect(db.app, autocommit=True) as conn:
        found = find_document(conn, locator)
        if found is None:  # a URL listed but not stored (waiting for yt-dlp, a failed fetch)
            inbox = inbox_paths(settings)[0]
            listed = [u for p in discover(inbox)[1] for u in read_url_list(p)]
            if (
                locator not in listed
                and not conn.execute(
                    "SELECT 1 FROM capture_skips WHERE kind = 'file' AND path = %s", [locator]
                ).fetchone()
            ):
                raise UserError(f"{locator!r}: no stored document; `memory-pipeline inbox list`")
            if not yes and not typer.confirm(f"forget {locator} (listed, not stored)?"):
                raise typer.Exit(1)
            kind = forget_unstored(conn, locator, listed)
            say(f"forgot {kind} {locator}: never stored; no run will fetch it")
            return
        if not yes and not typer.confirm(f"forget {found.kind} {found.locator} ({found.title})?"):
            raise typer.Exit(1)
        report = forget_document(conn, found, inbox_paths(settings)[1])
    say(
        f"forgot {found.kind} {found.locator}: {len(report.memories)} memories;"
        f" audit entry {report.audit_id} (`forget --log`)"
    )
    if found.path and Path(found.path).exists():
        say(f"{found.path} is still in the inbox: it will not be stored again; delete it")
