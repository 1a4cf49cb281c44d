"""The one exception a semantic pass raises when it fails as a whole."""

from __future__ import annotations


class SemanticPassError(RuntimeError):
    """A task revision's semantic pass failed; nothing from it may be stored.

    Raised for invalid model output (malformed JSON, schema or structural violations), timeouts,
    connection errors and HTTP errors alike. `backend` names the backend, `__cause__` (and
    `cause`) holds the underlying exception when there is one.
    """

    def __init__(self, backend: str, message: str, cause: BaseException | None = None) -> None:
        super().__init__(f"{backend}: {message}")
        self.backend = backend
        self.cause = cause
