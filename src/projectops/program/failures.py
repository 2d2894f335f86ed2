"""How a failed call is reported: the CLI's exit code and line, the tool server's sentence
(docs/contract.md §5.6).

One table, :data:`FAILURES`, keyed by exception class; :func:`failure` takes the row of the
nearest class in an exception's MRO. An error the server *answered* is reported by its status
where the contract promises an exit code by status (401 -> 3, 400 -> 4, others -> 5). Every
line and sentence is one line: escaped and cut to :data:`MAX_MESSAGE_CHARS` (outside text in it
was redacted where it entered, :mod:`projectops.client.redaction`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from projectops import client
from projectops._text import outside_text
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL
from projectops.errors import (
    ApiError,
    FailedPrecondition,
    InvalidArgument,
    OutOfRange,
    Unauthenticated,
)
from projectops.program.commands import CannotListen

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_UNAUTHENTICATED = 3
EXIT_BAD_REQUEST = 4
EXIT_FAILURE = 5
#: ``projectops conformance``: a ``must`` check failed, or ``--deadline`` stopped the run.
EXIT_CONFORMANCE_FAILED = 6
EXIT_INTERRUPTED = 130

#: Characters of an exception's text kept in a line or sentence.
MAX_MESSAGE_CHARS = 2000


class UsageError(Exception):
    """Wrong command-line arguments or unreadable local input: exit 2, nothing was sent."""


@dataclass(frozen=True)
class Failure:
    """How one class of failure is reported by the CLI and the tool server (docs/contract.md §5.6).

    Both texts are ``str.format`` templates of ``{tool}``, ``{status}``, ``{code}`` and
    ``{message}`` (escaped and cut).

    Attributes:
        exit_code: the CLI's exit code.
        line: the CLI's stderr line, after ``error: ``.
        sentence: the tool server's ``isError`` result text.
    """

    exit_code: int
    line: str
    sentence: str

    def format(self, exc: BaseException, tool: str) -> tuple[str, str]:
        """The CLI's line and the tool server's sentence of one failure.

        Args:
            exc: the exception raised.
            tool: the tool name of the operation called (``get-release-details``).

        Returns:
            ``(line, sentence)``, each one line.
        """
        status = None
        code = None
        text = str(exc)
        if isinstance(exc, ApiError):
            status = exc.http_status
            code = exc.code
            text = exc.describe()
        message = outside_text(text, MAX_MESSAGE_CHARS).rstrip(".")
        fields = {"tool": tool, "status": status, "code": code, "message": message}
        sentence = self.sentence.format(**fields).strip()
        if not sentence.endswith((".", "!", "?")):
            sentence += "."
        return self.line.format(**fields), sentence


# Local mistakes: the message says it all.
_LOCAL = Failure(EXIT_USAGE, "{message}", "{message}")
_REJECTED = Failure(
    EXIT_BAD_REQUEST,
    "{status} {code}: {message}",
    "The service rejected the request ({status} {code}): {message}",
)
_NO_RESPONSE = Failure(
    EXIT_FAILURE,
    "{message}",
    "The service did not answer: {message}; " + BASE_URL_ENV + " sets its base URL",
)

_TRY_THE_MOCK = (
    "{message}; to try the mock server, run `projectops mock-server` and set "
    f"{BASE_URL_ENV}={DEFAULT_BASE_URL}"
)

#: Exception class -> how it is reported.
FAILURES: Mapping[type[BaseException], Failure] = {
    UsageError: _LOCAL,
    CannotListen: _LOCAL,  # a busy or foreign --host/--port: fixed by another flag value
    client.MissingApiKey: Failure(
        EXIT_USAGE,
        "{message}",
        f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API key; it is "
        "not set, empty, or not usable as a header value, so nothing was sent",
    ),
    client.MissingBaseUrl: Failure(EXIT_USAGE, _TRY_THE_MOCK, _TRY_THE_MOCK),
    client.InvalidRequest: Failure(
        EXIT_USAGE, "invalid request: {message}", "Invalid arguments for {tool}: {message}"
    ),
    Unauthenticated: Failure(
        EXIT_UNAUTHENTICATED,
        "{status} {code}: {message} (the API key is missing or invalid; "
        + API_KEY_ENV
        + " sets it)",
        f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API key; the "
        "service answered {status} {code}: {message}",
    ),
    InvalidArgument: _REJECTED,
    FailedPrecondition: _REJECTED,
    OutOfRange: _REJECTED,
    client.ServiceUnreachable: _NO_RESPONSE,
    client.ResponseTimedOut: _NO_RESPONSE,
    client.ResponseTooLarge: Failure(
        EXIT_FAILURE, "{message}", "The service's answer could not be read safely: {message}"
    ),
    # A 2xx response that cannot be read: the message says what came; "200 internal" would read
    # as the server's own error.
    client.InvalidResponse: Failure(
        EXIT_FAILURE, "unusable answer: {message}", "The service's answer is unusable: {message}"
    ),
    ApiError: Failure(
        EXIT_FAILURE,
        "{status} {code}: {message}",
        "The service failed ({status} {code}): {message}",
    ),
    ValueError: _LOCAL,
    TypeError: _LOCAL,
    LookupError: _LOCAL,
}

_UNEXPECTED = Failure(
    EXIT_INTERNAL,
    "unexpected failure: {message}",
    "The tool server failed unexpectedly while running {tool}; its log (stderr) has the details",
)


def failure(exc: BaseException) -> Failure:
    """How a failure is reported (docs/contract.md §5.6).

    Args:
        exc: the exception raised by a call, or by the CLI's reading of its input.

    Returns:
        The row of :data:`FAILURES` of `exc`'s nearest class, else exit 1. An answered error's
        status decides where the contract promises it: 401 -> exit 3, 400 -> exit 4.
    """
    status = exc.http_status if isinstance(exc, ApiError) else None
    if status == 401:
        return FAILURES[Unauthenticated]
    if status == 400:
        return _REJECTED
    nearest = (FAILURES[c] for c in type(exc).__mro__ if c in FAILURES)
    row = next(nearest, _UNEXPECTED)
    if (
        status is not None
        and not 200 <= status < 400
        and row.exit_code in (EXIT_UNAUTHENTICATED, EXIT_BAD_REQUEST)
    ):
        return FAILURES[ApiError]
    return row
