"""Errors a user can act on.

A `UserError` message is one line that says what happened and what to do next; the CLI prints it
without a traceback. Anything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A problem with the environment or input that the user can fix."""
