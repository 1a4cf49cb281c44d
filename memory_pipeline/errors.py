"""Errors a user can act on.

A `UserError` message is one line that says what happened and what to do next; the CLI prints it
without a traceback. Anything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A problem with the environment or input that the user can fix."""


class BrowseError(ValueError):
    """An expected failure of reading memories by id or cursor (`serving/browse.py`, the private
    tier) whose message can be shown to the caller as is."""


class MemoryNotFound(BrowseError):
    def __init__(self, memory_id: object) -> None:
        super().__init__(f"memory {memory_id} not found")
