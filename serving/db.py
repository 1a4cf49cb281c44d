"""Serving's database access: always the read-only role, and failures told in one line.

The pipeline owns every write; serving can read memory tables and insert retrieval events,
nothing else, because the role it connects as (`memory_reader`, migration 011) can do nothing
else. The embedded server is started if needed (that writes no memory).

Which URL: MEMORY_READER_URL, else the one `memory-pipeline db reader-password` stored under
MEMORY_HOME for this database, else memory_reader on the pipeline's database without a password
(what the embedded server accepts on its own socket).

A failure to connect becomes a `ReaderError`: one line that says what happened and what to do,
and whether it is `temporary` (the server is down or busy: try again) or not (a refused password,
a missing role or database, a schema older than this code: someone must act first). The CLI
prints it; the MCP server turns it into a tool error the agent can relay.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.db.connection import READER_ROLE, connect, resolve_urls
from memory_pipeline.db.failures import classify
from memory_pipeline.db.migrate import discover
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings


class ReaderError(UserError):
    """The read-only connection cannot be used; `temporary` says whether retrying can help.

    `public` is the same advice without names the server put in its message (a database or
    host name): what the MCP server tells an agent.
    """

    def __init__(self, message: str, *, temporary: bool, public: str | None = None) -> None:
        super().__init__(message)
        self.temporary = temporary
        self.public = public or message


def reader_url(settings: Settings | None = None) -> str:
    """MEMORY_READER_URL when set; otherwise the read-only role on our database (starting the
    embedded server if that is the one we use)."""
    settings = settings or Settings.from_env()
    return settings.reader_url or resolve_urls(settings, start=True).reader


def connect_reader(url: str | None = None) -> psycopg.Connection:
    """An autocommit connection as the read-only role, its schema checked to be current."""
    url = url or reader_url()
    try:
        conn = connect(url, autocommit=True)
    except psycopg.OperationalError as exc:
        raise connect_failure(exc, url) from None
    try:
        check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def reader_errors() -> Iterator[None]:
    """A connection lost in the middle of a query becomes a temporary ReaderError."""
    try:
        yield
    except psycopg.OperationalError as exc:
        failure = classify(exc)
        raise ReaderError(
            f"the memory database stopped answering ({failure.detail}); try again in a moment",
            temporary=True,
        ) from None


def connect_failure(exc: BaseException, url: str) -> ReaderError:
    """The one-line ReaderError for a failed connection to `url` as the read-only role."""
    failure = classify(exc)
    params = _params(url)
    user = params.get("user", READER_ROLE)
    if failure.kind == "auth":
        fix = (
            "on a server that asks for passwords run `memory-pipeline db reader-password` once "
            "(it stores memory_reader's URL under MEMORY_HOME), or set MEMORY_READER_URL with "
            "the password"
        )
        return ReaderError(
            f"the database refused role {user} ({failure.detail}); {fix}",
            temporary=False,
            public=f"the database server refused the serving role's login; {fix}",
        )
    if failure.kind == "role":
        fix = (
            "run `memory-pipeline db migrate` (migration 011 creates it)"
            if user == READER_ROLE
            else "point MEMORY_READER_URL at the read-only role memory_reader"
        )
        return ReaderError(
            f"{failure.detail} on that server; {fix}",
            temporary=False,
            public=f"the serving role does not exist on the database server; {fix}",
        )
    if failure.kind == "database":
        fix = (
            "run `memory-pipeline run` once to create and fill it (or check DATABASE_URL and "
            "MEMORY_READER_URL)"
        )
        return ReaderError(
            f"{failure.detail}; {fix}",
            temporary=False,
            public=f"the memory database does not exist on the database server; {fix}",
        )
    advice = "check that the server is running, then try again"
    return ReaderError(
        f"cannot reach the memory database at {_where(params)} ({failure.detail}); {advice}",
        temporary=failure.temporary,
        public=f"the database server does not answer ({failure.kind}); {advice}",
    )


def check_schema(conn: psycopg.Connection) -> None:
    """Refuse a schema that is missing, or older or newer than this code's migrations."""
    row = conn.execute("SELECT to_regclass('public.schema_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        raise ReaderError(
            "the memory database has no schema yet; run `memory-pipeline run` (or "
            "`memory-pipeline db migrate`) first",
            temporary=False,
        )
    try:
        applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    except psycopg.errors.InsufficientPrivilege:
        raise ReaderError(
            "the read-only role may not read schema_migrations; run `memory-pipeline db migrate`",
            temporary=False,
        ) from None
    known = discover()
    missing = [m.filename for m in known if m.version not in applied]
    if missing:
        raise ReaderError(
            f"the memory database's schema is older than this program ({missing[0]} is not "
            "applied); run `memory-pipeline db migrate` (or `memory-pipeline run`)",
            temporary=False,
        )
    unknown = sorted(applied - {m.version for m in known})
    if unknown:
        raise ReaderError(
            f"the memory database has migration {unknown[-1]}, which this program does not "
            "know; update memory-pipeline to the version that wrote it",
            temporary=False,
        )


def _params(url: str) -> dict[str, str]:
    try:
        return {k: str(v) for k, v in conninfo_to_dict(url).items()}
    except psycopg.ProgrammingError:
        return {}


def _where(params: dict[str, str]) -> str:
    host = params.get("host", "localhost")
    if host.startswith("/"):
        return f"socket {host}"
    return f"{host}:{params.get('port', '5432')}"
