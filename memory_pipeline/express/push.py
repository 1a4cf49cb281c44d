"""The gated e-mail push: a stored briefing's new items, sent over SMTP when `should_push` holds.

Gate: only a NEW cross-project synthesis or a NEW contradiction (an item whose key no earlier
push carried) is worth interrupting the user for. When it holds, the mail carries every item of
the briefing not pushed before, so no item is ever sent twice (`express_pushed_items` has each
key once).

Settings come from the environment (settings.py: MEMORY_SMTP_HOST, _PORT, _SECURITY =
starttls|tls|none, _USER, _FROM, _TO); the password is read from MEMORY_SMTP_PASSWORD only at
the moment of sending. Nothing of it is stored in the repository or the database.

The briefing is stored before any push is tried, so a broken SMTP server fails the push (a
`failed` row in `express_pushes` with the one-line reason, and `PushError`) and loses nothing:
the next push tries the same items again.
"""

from __future__ import annotations

import os
import smtplib
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from email.message import EmailMessage
from email.utils import make_msgid

import psycopg

from memory_pipeline import tuning
from memory_pipeline.errors import UserError
from memory_pipeline.express import render
from memory_pipeline.express.models import StoredItem
from memory_pipeline.express.store import load_briefing

PASSWORD_ENV_VAR = "MEMORY_SMTP_PASSWORD"
SECURITY_MODES = ("starttls", "tls", "none")


class PushError(UserError):
    """The mail could not be sent; the briefing stays stored and unpushed."""


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    security: str
    sender: str
    recipients: tuple[str, ...]
    user: str | None = None
    timeout_s: float = tuning.EXPRESS_SMTP_TIMEOUT_S

    @classmethod
    def from_values(
        cls,
        host: str | None,
        port: int | None,
        security: str,
        user: str | None,
        sender: str | None,
        to: str | None,
    ) -> SmtpConfig | None:
        """None when no push is configured (no host or no recipient); a clear error when the
        configuration is half done."""
        recipients = tuple(a.strip() for a in (to or "").split(",") if a.strip())
        if not host or not recipients:
            return None
        mode = security.strip().lower()
        if mode not in SECURITY_MODES:
            raise UserError(
                f"MEMORY_SMTP_SECURITY={security!r} is not one of {', '.join(SECURITY_MODES)}"
            )
        return cls(
            host=host,
            port=port or (465 if mode == "tls" else 587),
            security=mode,
            sender=sender or user or recipients[0],
            recipients=recipients,
            user=user,
        )


@dataclass(frozen=True)
class PushOutcome:
    sent: bool
    reason: str
    items: int = 0
    push_id: str | None = None


def should_push(items: Iterable[StoredItem], pushed_keys: set[str]) -> tuple[bool, str]:
    """(push?, why): a new cross-project synthesis or a new contradiction, nothing else."""
    new = [i for i in items if i.key not in pushed_keys]
    triggers = [
        i for i in new if i.kind == "contradiction" or (i.kind == "synthesis" and i.cross_project)
    ]
    if not triggers:
        why = "no new cross-project synthesis or contradiction"
        return False, why if new else "nothing new since the last push"
    kinds = sorted(
        {"cross-project synthesis" if i.kind == "synthesis" else i.kind for i in triggers}
    )
    return True, f"new {' and '.join(kinds)} ({len(triggers)})"


def pushed_keys(conn: psycopg.Connection, keys: Sequence[str]) -> set[str]:
    rows = conn.execute(
        "SELECT item_key FROM express_pushed_items WHERE item_key = ANY(%s)", [list(keys)]
    ).fetchall()
    return {r[0] for r in rows}


def build_message(
    config: SmtpConfig, briefing, items: Sequence[StoredItem], memory_url: str
) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = render.subject(briefing, items)
    msg["From"] = config.sender
    msg["To"] = ", ".join(config.recipients)
    msg["Message-ID"] = make_msgid(domain="memory-pipeline.local")
    msg.set_content(render.plain(briefing, memory_url, items))
    msg.add_alternative(render.html_page(briefing, memory_url, items), subtype="html")
    return msg


def send(config: SmtpConfig, msg: EmailMessage, environ: Mapping[str, str] | None = None) -> None:
    """Deliver `msg`; any failure becomes one `PushError` line (never the password)."""
    env = os.environ if environ is None else environ
    password = env.get(PASSWORD_ENV_VAR)
    where = f"{config.host}:{config.port}"
    if config.user and not password:
        raise PushError(
            f"MEMORY_SMTP_USER is set but {PASSWORD_ENV_VAR} is empty: set the SMTP password in "
            "that environment variable"
        )
    try:
        if config.security == "tls":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(
                config.host,
                config.port,
                timeout=config.timeout_s,
                context=ssl.create_default_context(),
            )
        else:
            smtp = smtplib.SMTP(config.host, config.port, timeout=config.timeout_s)
        with smtp:
            if config.security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if config.user and password:
                smtp.login(config.user, password)
            smtp.send_message(msg)
    except smtplib.SMTPAuthenticationError as exc:
        raise PushError(
            f"SMTP server {where} refused the login ({exc.smtp_code}); check MEMORY_SMTP_USER "
            f"and {PASSWORD_ENV_VAR}"
        ) from None
    except smtplib.SMTPResponseException as exc:
        text = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else ""
        raise PushError(
            f"SMTP server {where} answered {exc.smtp_code} {' '.join(text.split())[:120]}; "
            "the briefing is stored and will be pushed on the next try"
        ) from None
    except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
        raise PushError(
            f"cannot send the briefing through {where} ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:120]}); the briefing is stored and will be pushed "
            "on the next try"
        ) from None


def push_briefing(
    conn: psycopg.Connection,
    config: SmtpConfig | None,
    day: date | None = None,
    memory_url: str = render.DEFAULT_MEMORY_URL,
    environ: Mapping[str, str] | None = None,
) -> PushOutcome:
    """Push `day`'s (or the latest) stored briefing if `should_push` holds; raises `PushError`
    when sending fails (after logging the failed attempt)."""
    briefing = load_briefing(conn, day)
    if briefing is None:
        return PushOutcome(False, "no briefing stored yet")
    if config is None:
        return PushOutcome(False, "no push configured (MEMORY_SMTP_HOST and MEMORY_SMTP_TO)")
    done = pushed_keys(conn, [i.key for i in briefing.items])
    go, why = should_push(briefing.items, done)
    if not go:
        return PushOutcome(False, why)
    items = [i for i in briefing.items if i.key not in done]
    msg = build_message(config, briefing, items, memory_url)
    recipients = ", ".join(config.recipients)
    try:
        with conn.transaction():
            row = conn.execute(
                "INSERT INTO express_pushes (briefing_id, status, reason, recipients, subject,"
                " item_count) VALUES (%s, 'sent', %s, %s, %s, %s) RETURNING id::text",
                [briefing.id, why, recipients, str(msg["Subject"]), len(items)],
            ).fetchone()
            assert row is not None
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO express_pushed_items (item_key, push_id, kind)"
                    " VALUES (%s, %s, %s)",
                    [(i.key, row[0], i.kind) for i in items],
                )
            # Sent inside the transaction: a refused mail rolls the "sent" record back.
            send(config, msg, environ)
    except PushError as exc:
        conn.execute(
            "INSERT INTO express_pushes (briefing_id, status, reason, recipients, subject,"
            " item_count) VALUES (%s, 'failed', %s, %s, %s, %s)",
            [briefing.id, str(exc), recipients, str(msg["Subject"]), len(items)],
        )
        raise
    return PushOutcome(True, why, len(items), row[0])
