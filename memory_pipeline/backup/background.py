"""Work a backup or a verify runs beside its own (pg_dump and its encryption, the table
checksums): in a thread, mostly waiting on other processes, so the GIL is rarely the limit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Self


class Background:
    """Run `work` in a thread; `result()` joins it and re-raises its error. Leaving the block
    early (an error or an interrupt here) waits for the thread after `abort()`."""

    def __init__(
        self, name: str, work: Callable[[], Any], abort: Callable[[], None] | None = None
    ) -> None:
        self._work = work
        self._abort = abort
        self._value: Any = None
        self._error: BaseException | None = None
        self.seconds = 0.0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self._value = self._work()
        except BaseException as exc:  # re-raised by result()
            self._error = exc
        self.seconds = time.monotonic() - started

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def abort(self) -> None:
        """Make the work end soon, when the caller is failing anyway."""
        if self._abort is not None:
            self._abort()

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.abort()
            self._thread.join()
