"""Errors of the LLM client. All are :class:`~lastknown_graph.errors.LastknownError`s."""

from __future__ import annotations

from lastknown_graph.errors import LastknownError


class LLMError(LastknownError):
    """The LLM endpoint refused a request or could not be used; the message says which endpoint and why."""


class LLMUnavailableError(LLMError):
    """The endpoint could not be reached or kept failing (connection, timeout, 429, 5xx) after bounded retries."""


class LLMOutputError(LLMError):
    """The endpoint answered, but no answer could be read as what was asked for, after retries.

    ``output`` holds the last answer's text (trimmed), which the message quotes as well.
    """

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output
