"""Which PostgreSQL we use and how to reach it.

`DATABASE_URL` selects any PostgreSQL >= 15 with pgvector. Unset, the embedded server under
`MEMORY_HOME` is started on demand. Either way the one server hosts two databases: ours (memory
tables) and Dagster's instance storage, which dagster-postgres reaches through psycopg2 (hence the
explicit `postgresql+psycopg2://` scheme: a bare `postgresql://` makes SQLAlchemy 2.1 pick
psycopg 3, and Dagster's `NOTIFY run_events, $1` then fails).

A `DATABASE_URL` is checked before anything connects: a URL without a database name would make
libpq fall back to the user's name (and us create `<user>_dagster` beside it), so it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote, urlencode

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.db.failures import classify
from memory_pipeline.db.reader import stored_reader_url
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

APP_DB = "memory"
DAGSTER_DB = "dagster"
READER_ROLE = "memory_reader"
MIN_SERVER_VERSION = 150000
CONNECT_TIMEOUT_S = 5
URL_SCHEMES = ("postgresql", "postgres")
URL_EXAMPLE = "postgresql://me:password@db.example:5432/memory"


@dataclass(frozen=True)
class DatabaseUrls:
    app: str  # our database, as the owner (pipeline writes)
    reader: str  # our database, as the read-only role (serving)
    dagster: str  # Dagster's instance database, SQLAlchemy URL with the psycopg2 driver
    embedded: bool

    @property
    def app_dbname(self) -> str:
        return str(conninfo_to_dict(self.app).get("dbname", APP_DB))

    @property
    def dagster_dbname(self) -> str:
        return _sqlalchemy_dbname(self.dagster)


def parse_database_url(url: str) -> dict[str, str]:
    """libpq parameters of DATABASE_URL, or a one-line UserError saying what is wrong with it.

    Messages never quote the URL: it may hold a password.
    """
    text = url.strip()
    if "://" in text:
        scheme = text.split("://", 1)[0]
        if scheme not in URL_SCHEMES:
            hint = " (that scheme is for DAGSTER_PG_URL)" if scheme == "postgresql+psycopg2" else ""
            raise UserError(
                f"DATABASE_URL starts with {scheme}://{hint}; it must be a postgresql:// URL "
                f"such as {URL_EXAMPLE}"
            )
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(text).items()}
    except psycopg.ProgrammingError:
        raise UserError(
            f"DATABASE_URL is not a PostgreSQL connection URL; use one such as {URL_EXAMPLE}"
        ) from None
    if not params.get("dbname"):
        raise UserError(
            "DATABASE_URL names no database; put it after the host, e.g. "
            f"{URL_EXAMPLE} (the database is created if this role may create databases)"
        )
    return params


def resolve_urls(settings: Settings, start: bool = True) -> DatabaseUrls:
    """Work out every connection URL; start the embedded server first if needed and allowed."""
    if settings.database_url:
        app = settings.database_url
        params = parse_database_url(app)
        dagster_params = {**params, "dbname": f"{params['dbname']}_dagster"}
        reader_params = {k: v for k, v in params.items() if k != "password"}
        reader_params["user"] = READER_ROLE
        return DatabaseUrls(
            app=app,
            reader=(
                settings.reader_url
                or stored_reader_url(settings.memory_home, params)
                or build_url(reader_params)
            ),
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
    """Create our database and Dagster's if missing.

    Call `db.check.require(urls, ("server",))` first (ensure_ready does): a server this role
    cannot use is then refused with what to fix before anything is created on it.
    """
    with open_admin(urls) as admin:
        for name in (urls.app_dbname, urls.dagster_dbname):
            create_database_if_missing(admin, name)


def open_admin(urls: DatabaseUrls) -> psycopg.Connection:
    """An autocommit connection for CREATE DATABASE: our database if it exists, else `postgres`."""
    try:
        return psycopg.connect(urls.app, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.OperationalError as exc:
        if not is_missing_database(exc):
            raise_unreachable(exc, urls.embedded)
    params = conninfo_to_dict(urls.app)
    return connect_or_explain(build_url({**params, "dbname": "postgres"}), urls.embedded)


def connect_or_explain(url: str, embedded: bool) -> psycopg.Connection:
    """An autocommit connection, or a one-line UserError saying why there is none."""
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.OperationalError as exc:
        raise_unreachable(exc, embedded)
        raise  # unreachable: raise_unreachable always raises


def raise_unreachable(exc: psycopg.OperationalError, embedded: bool) -> None:
    """A one-line UserError for a failed connection with DATABASE_URL (or the embedded one)."""
    if embedded:
        raise UserError(f"cannot connect to the embedded database: {first_line(exc)}") from exc
    failure = classify(exc)
    if failure.kind == "auth":
        raise UserError(
            f"the server refused DATABASE_URL's login ({failure.detail}); check the user name "
            "and password in DATABASE_URL"
        ) from exc
    if failure.kind == "role":
        raise UserError(
            f"{failure.detail}: DATABASE_URL names a role this server does not have; an "
            "administrator creates it (CREATE ROLE ... LOGIN PASSWORD ... CREATEROLE CREATEDB)"
        ) from exc
    raise UserError(
        f"DATABASE_URL is unreachable ({first_line(exc)}); check host, port and credentials, "
        "or unset DATABASE_URL to use the embedded server"
    ) from exc


def is_missing_database(exc: BaseException) -> bool:
    # Connection failures carry no SQLSTATE in psycopg; the server's FATAL text is stable.
    text = str(exc)
    return 'database "' in text and '" does not exist' in text


def create_database_if_missing(admin: psycopg.Connection, name: str) -> None:
    if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
        return
    try:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
        pass  # another process created it between our check and now
    except psycopg.errors.InsufficientPrivilege as exc:
        raise UserError(
            f"database {name!r} does not exist and this role may not create it; an administrator "
            f"runs: CREATE DATABASE {sql_ident(name)} OWNER {sql_ident(admin.info.user)};"
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


def sql_ident(name: str) -> str:
    """An identifier as it must be written in SQL a user copies (quoted only when needed)."""
    if name and name.isidentifier() and name == name.lower() and name.isascii():
        return name
    return '"' + name.replace('"', '""') + '"'


def _sqlalchemy_dbname(url: str) -> str:
    path = url.split("://", 1)[1].split("/", 1)[1]
    return unquote(path.split("?", 1)[0])


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
