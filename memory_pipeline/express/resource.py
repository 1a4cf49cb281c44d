"""The Express resource: the editor and push settings the briefing assets use."""

from __future__ import annotations

import dagster as dg

from memory_pipeline.express.briefing import EditorChoice
from memory_pipeline.express.push import SmtpConfig
from memory_pipeline.settings import Settings


class ExpressResource(dg.ConfigurableResource):
    """Editor model, digest weekday, memory links and SMTP push (no password: that is read from
    MEMORY_SMTP_PASSWORD only when a mail is sent)."""

    ollama_host: str = "http://127.0.0.1:11434"
    model: str | None = None
    timeout_s: float = 120.0
    digest_weekday: str = "monday"
    memory_url: str = "memory:{id}"
    smtp_host: str | None = None
    smtp_port: int | None = None
    smtp_security: str = "starttls"
    smtp_user: str | None = None
    smtp_from: str | None = None
    smtp_to: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ExpressResource:
        return cls(
            ollama_host=settings.ollama_host,
            model=settings.brief_model,
            timeout_s=settings.ollama_timeout_s,
            digest_weekday=settings.brief_digest_weekday,
            memory_url=settings.brief_memory_url,
            smtp_host=settings.smtp_host,
            smtp_port=settings.smtp_port,
            smtp_security=settings.smtp_security,
            smtp_user=settings.smtp_user,
            smtp_from=settings.smtp_from,
            smtp_to=settings.smtp_to,
        )

    def editor(self) -> EditorChoice:
        return EditorChoice(self.model, self.ollama_host, self.timeout_s)

    def smtp(self) -> SmtpConfig | None:
        return SmtpConfig.from_values(
            self.smtp_host,
            self.smtp_port,
            self.smtp_security,
            self.smtp_user,
            self.smtp_from,
            self.smtp_to,
        )
