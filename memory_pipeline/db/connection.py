"""Which PostgreSQL we use and how to reach it.

`DATABASE_URL` selects any PostgreSQL >= 15 with pgvector. Unset, the embedded server under
`MEMORY_HOME` is started on demand. Either way the one server hosts two databases: ours (memory
tables) and Dagster's instance storage, which dagster-postgres reaches through psycopg2 (hence the
explicit `postgresql+psycopg2://` scheme: a bare `postgresql://` makes SQLAlchemy 2.1 pick
psycopg 3, and Dagster's `NOTIFY run_events, $1` then fails).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

APP_DB = "memory"
DAGSTER_DB = "dagster"
READER_ROLE = "memory_reader"
MIN_SERVER_VERSION = 150000
CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class DatabaseUrls:
    app: str  # our database, as the owner (pipeline writes)
    reader: str  # our database, as the read-only role (serving)
    dagster: str  # Dagster's instance database, SQLAlchemy URL with the psycopg2 driver
    embedded: bool


def resolve_urls(settings: Settings, start: bool = True) -> DatabaseUrls:
    """Work out every connection URL; start the embedded server first if needed and allowed."""
    if settings.database_url:
        app = settings.database_url
        params = conninfo_to_dict(app)
        dagster_params = {**params, "dbname": f"{params.get('dbname', 'postgres')}_dagster"}
        reader_params = {k: v for k, v in params.items() if k != "password"}
        reader_params["user"] = READER_ROLE
        return DatabaseUrls(
            app=app,
            reader=settings.reader_url or build_url(reader_params),
            dagster=settings.dagster_pg_url or sqlalchemy_url(dagster_params),
            embedded=False,
        )
    server = EmbeddedServer(settings.pgdata)
    if start:
        server.start()
    app = server.uri(APP_DB)
    return DatabaseUrls(
        app=app,
        reader=settings.reader_url or server.uri(APP_DB, user=READER_ROLE),
        dagster=settings.dagster_pg_url or sqlalchemy_url(conninfo_to_dict(server.uri(DAGSTER_DB))),
        embedded=True,
    )


def connect(url: str, **kwargs: object) -> psycopg.Connection:
    """Open a psycopg 3 connection with pgvector's types registered."""
    conn = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)  # type: ignore[arg-type]
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass  # extension not created yet (before the first migration)
    return conn


def prepare_server(urls: DatabaseUrls) -> None:
    """Check the server, create our database and Dagster's if missing, and check pgvector."""
    params = conninfo_to_dict(urls.app)
    with _connect_or_explain(build_url({**params, "dbname": "postgres"}), urls.embedded) as admin:
        version = admin.info.server_version
        if version < MIN_SERVER_VERSION:
            raise UserError(
                f"PostgreSQL {version // 10000} is too old; memory-pipeline needs 15 or newer"
            )
        for name in (params.get("dbname", APP_DB), _sqlalchemy_dbname(urls.dagster)):
            _create_database_if_missing(admin, name)
    with _connect_or_explain(urls.app, urls.embedded) as app:
        available = app.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    if not available:
        raise UserError(
            "pgvector is missing on this PostgreSQL server; install it "
            "(https://github.com/pgvector/pgvector#installation) or unset DATABASE_URL "
            "to use the embedded server, which ships it"
        )


def _connect_or_explain(url: str, embedded: bool) -> psycopg.Connection:
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.OperationalError as exc:
        if embedded:
            raise UserError(f"cannot connect to the embedded database: {_first_line(exc)}") from exc
        raise UserError(
            f"DATABASE_URL is unreachable ({_first_line(exc)}); check host, port and credentials, "
            "or unset DATABASE_URL to use the embedded server"
        ) from exc


def _create_database_if_missing(admin: psycopg.Connection, name: str) -> None:
    if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
        return
    try:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
        pass  # another process created it between our check and now
    except psycopg.errors.InsufficientPrivilege as exc:
        raise UserError(
            f"database {name!r} does not exist and this role may not create it; create it "
            "yourself (for Dagster's, or set DAGSTER_PG_URL to an existing one)"
        ) from exc


def sqlalchemy_url(params: dict[str, str]) -> str:
    """A `postgresql+psycopg2://` URL for Dagster from libpq parameters."""
    return build_url(params, scheme="postgresql+psycopg2")


def build_url(params: dict[str, str], scheme: str = "postgresql") -> str:
    """A URL from libpq parameters; a Unix-socket directory host goes in the query string."""
    user = quote(params.get("user", "postgres"), safe="")
    password = params.get("password")
    netloc = (f"{user}:{quote(password, safe='')}" if password else user) + "@"
    query = {k: v for k, v in params.items() if k not in {"user", "password", "dbname", "host"}}
    host = params.get("host", "")
    if host.startswith("/"):
        query["host"] = host
    else:
        netloc += host or "localhost"
        if "port" in query:
            netloc += f":{query.pop('port')}"
    suffix = f"?{urlencode(query)}" if query else ""
    return f"{scheme}://{netloc}/{quote(params.get('dbname', APP_DB), safe='')}{suffix}"


def _sqlalchemy_dbname(url: str) -> str:
    path = url.split("://", 1)[1].split("/", 1)[1]
    return path.split("?", 1)[0]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
