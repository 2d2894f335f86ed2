"""The HTTP conventions of the API (docs/contract.md §1 and §2), as constants and small helpers."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from projectops._text import REDACTED, outside_text, redact_secrets

#: Request header that carries the project API key (docs/contract.md §2).
API_KEY_HEADER = "Service-Api-Key"
#: Environment variable the CLI and the tool server read the API key from (docs/contract.md §2).
API_KEY_ENV = "SERVICE_API_KEY"
#: Environment variable that overrides the base URL (docs/contract.md §1.4).
BASE_URL_ENV = "SERVICE_BACKEND_URL"
#: Content type of every request and response body (docs/contract.md §1.3).
CONTENT_TYPE = "application/json"
#: Path prefix of every operation (docs/contract.md §1.1).
PATH_PREFIX = "/api/mcp/"
#: Address of the bundled mock server; not a client default (docs/contract.md §1.4).
DEFAULT_BASE_URL = "http://127.0.0.1:8787"
#: Largest request body the server adapter accepts, in bytes (1 MiB); larger ones get 413.
MAX_BODY_BYTES = 1024 * 1024
#: Seconds a client call may take as a whole by default (``timeout``, ``--timeout``).
DEFAULT_CALL_TIMEOUT = 30.0
#: Seconds a server (``create_app``, the mock server, the proxy) waits for a request body to
#: arrive whole by default (``body_timeout``, ``--body-timeout``); then 408. A client's whole
#: call has as long: no body it sends in time is cut.
DEFAULT_BODY_TIMEOUT = DEFAULT_CALL_TIMEOUT
#: Largest answer body a client reads by default, in bytes (``max_response_bytes``, 32 MiB).
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: Environment variable that turns on ``create_app``'s check of its own responses against the
#: schema's rules when it is ``1`` (docs/contract.md §4.6); the pytest plugin sets it.
VALIDATE_RESPONSES_ENV = "PROJECTOPS_VALIDATE_RESPONSES"


def header_key(name: str) -> str:
    """`name` as servers that ignore case and read ``_`` as ``-`` (CGI) see it: the key header
    in any spelling is one key (docs/contract.md §2).

    Args:
        name: an HTTP header name (outside text; the pattern is linear).

    Returns:
        `name` lower-cased, every character but ASCII letters and digits removed.
    """
    return re.sub(r"[^a-z0-9]", "", name.lower())


def operation_path(name: str) -> str:
    """The HTTP path of an operation (docs/contract.md §1.1).

    Args:
        name: an operation name in snake_case, ``get_release_details``.

    Returns:
        ``/api/mcp/<name>``.
    """
    return PATH_PREFIX + name


def rpc_operation_name(rpc_name: str) -> str:
    """The operation name of an rpc (docs/contract.md §8.2).

    Args:
        rpc_name: the rpc's name in CamelCase, ``GetReleaseDetails``.

    Returns:
        Its snake_case operation name, ``get_release_details``.
    """
    return _WORD_START.sub("_", rpc_name).lower()


# Zero-width, so linear whatever the name: a capital that follows a lower-case letter or digit.
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def tool_name(name: str) -> str:
    """The tool name of an operation: its CLI command and MCP tool (docs/contract.md §1.6).

    Args:
        name: an operation name in snake_case, ``get_release_details``.

    Returns:
        The name in kebab-case, ``get-release-details``.
    """
    return name.replace("_", "-")


def operation_name(tool: str) -> str:
    """The operation name of a tool name, the inverse of :func:`tool_name` (docs/contract.md §1.6).

    Args:
        tool: a tool name in kebab-case, ``get-release-details``.

    Returns:
        The name in snake_case, ``get_release_details``.
    """
    return tool.replace("-", "_")


# C0 and C1 controls and DEL: an HTTP library would write them into the request line or Host.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class InvalidBaseUrl(ValueError):
    """A base URL that :func:`normalize_base_url` refuses (docs/contract.md §1.4)."""


def shown_url(url: str, secrets: Iterable[str | None] = ()) -> str:
    """`url` as a message may show it (docs/contract.md §1.4, §9.4): without its query,
    fragment, user name and password, with the key redacted wherever it stands (the value of
    ``SERVICE_API_KEY`` and each of `secrets`, in the spellings of
    :func:`projectops._text.redact_secrets`), escaped and cut to 200 characters.

    Args:
        url: any text given as a URL (outside text; it need not be a valid URL).
        secrets: further keys to redact (blank ones and ``None`` are skipped).

    Returns:
        The text to put in a message, never holding a key or anything after ``?`` or ``#``.
    """
    text = url.strip()
    for mark in "?#":
        text = text.split(mark, 1)[0]
    scheme, found, rest = text.rpartition("://")
    authority, slash, path = rest.partition("/")
    authority = authority.rpartition("@")[2]  # a user name or password never shows
    text = f"{scheme}{found}{authority}{slash}{path}"
    keys = [os.environ.get(API_KEY_ENV), *secrets]
    return outside_text(redact_secrets(text, keys, REDACTED), 200)


def normalize_base_url(url: str, *, secrets: Iterable[str | None] = ()) -> str:
    """Check and normalise a base URL (docs/contract.md §1.4): absolute http(s), no trailing slash.

    Args:
        url: the base URL as given (surrounding white space is ignored).
        secrets: keys that an error message must not show, beside ``SERVICE_API_KEY``'s
            value (a message quotes the URL only through :func:`shown_url`).

    Returns:
        `url` without surrounding white space and trailing slashes.

    Raises:
        InvalidBaseUrl: (a ValueError) not an absolute http(s) URL; a malformed host or port, a
            query or fragment, a control character, or a user or password (never quoted).
    """
    shown = f"'{shown_url(url, secrets)}'"
    rest = url.strip().split("://", 1)[-1]
    if "@" in re.split(r"[/?#]", rest, maxsplit=1)[0]:
        raise InvalidBaseUrl(
            "base URL must not hold a user name or password (the part before '@'); the "
            f"project's API key goes in {API_KEY_ENV} or api_key, never in the URL"
        )
    if _CONTROL.search(url.strip()):
        raise InvalidBaseUrl(
            f"base URL must not hold a control character (a line break, a tab, ...), got {shown}"
        )
    stripped = url.strip().rstrip("/")
    try:
        parts = urlsplit(stripped)
        parts.port  # noqa: B018 - only to raise ValueError for a port out of range
    except ValueError as exc:  # a malformed host ("http://[::1") or port
        why = outside_text(str(exc), 100, [os.environ.get(API_KEY_ENV), *secrets])
        raise InvalidBaseUrl(f"base URL is not a valid URL ({why}), got {shown}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidBaseUrl(f"base URL must be an absolute http(s) URL, got {shown}")
    if parts.query or parts.fragment:
        # The query and fragment are not shown: that is where a key would travel.
        raise InvalidBaseUrl(
            f"base URL must not have a query or fragment (from '?' or '#' on), got {shown} "
            "followed by one"
        )
    return stripped


def base_url_hint(base_url: str) -> str | None:
    """A hint for a base URL that holds an operation's path prefix, so that every call would be
    answered 404 (docs/contract.md §1.4).

    Args:
        base_url: a base URL as :func:`normalize_base_url` returns it.

    Returns:
        One sentence saying which base URL was probably meant, or ``None`` when the URL does not
        end in the ``/api/mcp`` prefix.
    """
    path = urlsplit(base_url).path
    prefix = PATH_PREFIX.rstrip("/")
    at = path.find(prefix + "/")
    if path.endswith(prefix):
        at = len(path) - len(prefix)
    if at < 0:
        return None
    root = base_url[: len(base_url) - len(path) + at]
    return (
        f"the base URL is the service's root, without {prefix}: calls go to "
        f"{shown_url(base_url)}{PATH_PREFIX}<operation>; did you mean {shown_url(root)}?"
    )
