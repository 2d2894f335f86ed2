"""The OpenAPI 3.1 document of the API, derived from the registry (paths, ids, texts),
:mod:`projectops.json_schema` (schemas), :data:`ERROR_CASES` (error responses) and the default
fixtures (examples). Choices:

- Components are keyed by full proto name. A message reached from a response has its output
  form; one reached only from requests its input form; from both, the input form is
  ``<full name>.input``. Request schemas forbid unknown properties only with ``strict=True``.
- An operation's tag is the proto file stem of its response's first message field (else of the
  rpc): operations are grouped by what they return.
- Error responses group :data:`ERROR_CASES` by status: every status the adapter can answer an
  operation's call with, a handler's errors of every code included, each with the
  ``ErrorResponse`` schema; the 404 and 405 of no operation (:data:`OUTSIDE_OPERATIONS`) are
  stated once, in ``info.description`` and ``x-answers-outside-operations``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import PurePosixPath
from typing import Any, Literal

from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import Message

import projectops
from projectops import error_cases, json_schema
from projectops._wire import value_form
from projectops.codec import from_json, to_dict
from projectops.conventions import (
    API_KEY_HEADER,
    CONTENT_TYPE,
    DEFAULT_BASE_URL,
    InvalidBaseUrl,
    shown_url,
)
from projectops.descriptions import description
from projectops.error_cases import ERROR_CASES, MALFORMED_BODY, MISSING_REQUIRED, ErrorCase
from projectops.errors import Code, InvalidArgument
from projectops.fixtures import default_fixtures
from projectops.registry import REGISTRY, Operation, Registry
from projectops.v1.error_pb2 import ErrorResponse
from projectops.validation import validate

__all__ = ["ERROR_CASES", "OPENAPI_VERSION", "OUTSIDE_OPERATIONS", "SECURITY_SCHEME", "TITLE"]
__all__ += ["ErrorCase", "RenderError", "document", "render", "server_url"]

OPENAPI_VERSION = "3.1.1"
TITLE = "Project-Scoped Operations API"
#: Name of the API-key security scheme in ``components.securitySchemes``.
SECURITY_SCHEME = "ServiceApiKey"
_REF_BASE = "#/components/schemas/"
#: A relative server: a path of RFC 3986 path characters (one class, so no backtracking).
_SERVER_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")

#: The adapter's responses of no operation (an unknown path, a method but POST): stated once, not
#: among every POST's responses, where tools would offer them as outcomes of a call.
OUTSIDE_OPERATIONS: tuple[ErrorCase, ...] = error_cases.OUTSIDE_OPERATIONS


class RenderError(ValueError):
    """:func:`render` cannot produce the format asked for (unknown, or PyYAML missing)."""


def document(
    base_url: str | None = DEFAULT_BASE_URL,
    *,
    strict: bool = False,
    registry: Registry = REGISTRY,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API: every operation, its schemas and examples, and the
    error responses of docs/contract.md §5.

    Args:
        base_url: the server the document names (``servers[0].url``, see :func:`server_url`):
            an absolute http(s) URL or a path; default :data:`projectops.DEFAULT_BASE_URL`;
            ``None``: ``/``, the page's own origin.
        strict: describe a server made with ``create_app(strict=True)`` (unknown properties
            refused, §3.4); ``False`` by default.
        registry: the operations to document; :data:`projectops.registry.REGISTRY` (this
            package's service) by default.

    Returns:
        A new ``dict`` each call, safe to edit.

    Raises:
        projectops.InvalidBaseUrl: see :func:`server_url`.
    """
    doc = copy.deepcopy(_document(strict, registry))
    return {**doc, "servers": [{"url": server_url(base_url)}]}


def server_url(base_url: str | None) -> str:
    """``servers[0].url`` of the document for a base URL (docs/contract.md §1.4).

    Args:
        base_url: an absolute http(s) URL, normalised as :func:`projectops.normalize_base_url`
            does; or a path of one leading ``/`` that cannot name another host (browsers read
            ``/\\evil.example`` as one); ``None``: ``/``.

    Returns:
        The URL or path, without a trailing slash (``/`` stays ``/``).

    Raises:
        projectops.InvalidBaseUrl: (a ``ValueError``) neither such a URL nor such a path.
    """
    if base_url is None:
        return "/"
    if not base_url.startswith("/"):
        return projectops.normalize_base_url(base_url)
    if base_url.startswith("//") or not _SERVER_PATH.fullmatch(base_url):
        raise InvalidBaseUrl(
            "a relative server must be a path of one leading '/' and URL path characters, "
            f"got '{shown_url(base_url)}'"
        )
    return base_url.rstrip("/") or "/"


def render(
    base_url: str | None = DEFAULT_BASE_URL,
    fmt: str = "json",
    registry: Registry = REGISTRY,
) -> str:
    """:func:`document` as text, for ``projectops openapi`` and files.

    Args:
        base_url: as for :func:`document`.
        fmt: ``"json"`` (the default, indented by 2) or ``"yaml"`` (needs PyYAML).
        registry: as for :func:`document`.

    Returns:
        The text, ending in a newline.

    Raises:
        RenderError: `fmt` is neither ``json`` nor ``yaml``, or PyYAML is not installed.
        projectops.InvalidBaseUrl: see :func:`server_url`.
    """
    if fmt not in ("json", "yaml"):
        raise RenderError(f"unknown format {fmt!r}; expected json or yaml")
    doc = document(base_url, registry=registry)
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        import yaml
    except ImportError:
        raise RenderError(
            "YAML output needs PyYAML: pip install pyyaml (or use --format json)"
        ) from None
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


@cache
def _document(strict: bool, registry: Registry) -> dict[str, Any]:
    schemas = _Components(strict, registry)
    # The default fixtures answer this package's operations, not another registry's.
    examples = _examples() if registry is REGISTRY else {}
    paths: dict[str, Any] = {}
    for op in registry.operations():
        given = examples.get(op.name, {})
        paths[op.path] = {"post": _operation(op, schemas, given)}
        for message, side in (
            (op.method.input_type, "request"),
            (op.method.output_type, "response"),
        ):
            if given:  # outputs are all added first: this is the component refs point to
                schemas.schema(message)["examples"] = [e[side] for e in given.values()]
    tags = dict.fromkeys(map(_tag, registry.operations()))
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": TITLE,
            "version": projectops.__version__,
            "description": description(registry.service) + "\n\n" + _outside_text(),
        },
        "servers": [],
        "tags": [{"name": tag} for tag in tags],
        "paths": paths,
        "components": {
            "securitySchemes": {
                SECURITY_SCHEME: {
                    "type": "apiKey",
                    "in": "header",
                    "name": API_KEY_HEADER,
                    "description": "The project's API key. The key alone selects the project "
                    "every operation works on.",
                }
            },
            "schemas": schemas.finish(),
        },
        "x-answers-outside-operations": [
            {
                "status": case.http_status,
                "code": str(case.code),
                "situation": case.situation,
                "headers": dict(case.headers),
                "example": _error_example(case),
            }
            for case in OUTSIDE_OPERATIONS
        ],
    }


def _outside_text() -> str:
    lines = ["## Answers outside the operations", ""]
    for case in OUTSIDE_OPERATIONS:
        headers = "".join(
            f" It carries the header `{name}: {value}`." for name, value in case.headers.items()
        )
        lines.append(f"- {case.http_status} `{case.code}`: {case.situation}{headers}")
    return "\n".join(lines)


def _first_sentence(text: str) -> str:
    return text.split(". ", 1)[0].rstrip(".") + "."


def _error_example(
    case: ErrorCase, request_type: type[Message] | None = None
) -> dict[str, Any] | None:
    """`case`'s ``ErrorResponse``: our own where there is one (``None``: no REQUIRED field)."""
    if request_type is not None and case == MALFORMED_BODY:
        try:
            from_json(b"[]", request_type, strict=True)
        except InvalidArgument as exc:
            return to_dict(exc.to_proto())
    if request_type is not None and case == MISSING_REQUIRED:
        try:
            validate(request_type())
        except InvalidArgument as exc:
            return to_dict(exc.to_proto())
        return None
    text = _first_sentence(case.situation.replace("`", ""))
    return to_dict(case.error(text).to_proto())


def _operation(
    op: Operation,
    schemas: _Components,
    examples: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "operationId": op.name,
        "summary": op.summary,
        "description": op.description,
        "tags": [_tag(op)],
        "security": [{SECURITY_SCHEME: []}],
        "x-idempotency-level": op.idempotency,
        "x-read-only": op.read_only,
        "x-idempotent": op.idempotent,
    }
    if op.deprecated:
        item["deprecated"] = True
    request = op.method.input_type
    answer = op.method.output_type
    item["requestBody"] = {
        # An empty body reads as `{}`: it is only wrong when the schema requires a field.
        "required": "required" in schemas.schema(request, "input"),
        "description": description(request),
        "content": _content(schemas.ref(request, "input"), examples, "request"),
    }
    responses: dict[str, Any] = {
        "200": {
            "description": description(answer),
            "content": _content(schemas.ref(answer, "output"), examples, "response"),
        }
    }
    error_ref = schemas.ref(ErrorResponse.DESCRIPTOR, "output")
    for status, cases in _error_statuses():
        error_examples: dict[str, Any] = {}
        for case in cases:
            value = _error_example(case, op.request_type)
            if value is None:
                continue
            name = str(case.code)
            if name in error_examples:  # two situations of one code (invalid_argument)
                name = f"{name}-{sum(key.startswith(name) for key in error_examples) + 1}"
            error_examples[name] = {"summary": _first_sentence(case.situation), "value": value}
        response: dict[str, Any] = {
            "description": "\n".join(f"- `{case.code}`: {case.situation}" for case in cases),
            "content": {CONTENT_TYPE: {"schema": error_ref, "examples": error_examples}},
        }
        headers: dict[str, str] = {}
        for case in cases:
            headers.update(case.headers)
        if headers:
            response["headers"] = {
                name: {
                    "description": " ".join(
                        f"`{value}` when {case.when}."
                        for case in cases
                        if case.headers.get(name) == value
                    ),
                    # Required only when every situation of the status sends it.
                    "required": all(name in case.headers for case in cases),
                    "schema": {"type": "string", "const": value},
                }
                for name, value in headers.items()
            }
        responses[str(status)] = response
    item["responses"] = responses
    return item


def _content(
    schema: dict[str, Any],
    examples: Mapping[str, Mapping[str, Any]],
    side: Literal["request", "response"],
) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": schema}
    if examples:
        media["examples"] = {
            name: {
                "summary": f"Project {example['project']} of the mock server's fixtures",
                "value": example[side],
            }
            for name, example in examples.items()
        }
    return {CONTENT_TYPE: media}


def _error_statuses() -> list[tuple[int, list[ErrorCase]]]:
    by_status: dict[int, list[ErrorCase]] = {}
    for case in (case for case in ERROR_CASES if case not in OUTSIDE_OPERATIONS):
        by_status.setdefault(case.http_status, []).append(case)
    return sorted(by_status.items())


def _tag(op: Operation) -> str:
    file = op.method.containing_service.file
    for fd in op.method.output_type.fields:
        message = value_form(fd).message
        if message is not None:
            file = message.file
            break
    return PurePosixPath(file.name).stem


class _Components:
    def __init__(self, strict: bool, registry: Registry) -> None:
        self._strict = strict
        self._registry = registry
        self._schemas: dict[str, dict[str, Any]] = {}
        self._output: set[str] = set()
        # Output forms first: which messages they reach decides the names of input forms.
        for op in registry.operations():
            self._add(op.method.output_type, "output")
        error = self._add(ErrorResponse.DESCRIPTOR, "output")
        # `code` is a string on the wire; its values are the code names of the error model.
        self._schemas[error]["properties"]["code"]["enum"] = [code.value for code in Code]

    def ref(
        self,
        message: Descriptor,
        direction: json_schema.Direction,
    ) -> dict[str, Any]:
        """``{"$ref": ...}`` to `message` in `direction` (built on first use)."""
        return {"$ref": _REF_BASE + self._add(message, direction)}

    def schema(
        self,
        message: Descriptor,
        direction: json_schema.Direction = "output",
    ) -> dict[str, Any]:
        """The component of `message` in `direction` (built on first use)."""
        return self._schemas[self._add(message, direction)]

    def finish(self) -> dict[str, dict[str, Any]]:
        """Every component (the messages nothing reached too), sorted by name."""
        files = {op.method.containing_service.file for op in self._registry.operations()}
        for message in _messages(files):
            self._add(message, "output")
        return dict(sorted(self._schemas.items()))

    def _key(self, message: Descriptor, direction: json_schema.Direction) -> str:
        name = message.full_name
        return f"{name}.input" if direction == "input" and name in self._output else name

    def _add(self, message: Descriptor, direction: json_schema.Direction) -> str:
        key = self._key(message, direction)
        if key in self._schemas:
            return key

        def ref(nested: Descriptor) -> str:
            return _REF_BASE + self._key(nested, direction)

        schema = json_schema.message_schema(
            message,
            direction,
            ref=ref,
            allow_unknown=not self._strict,
            required_values=direction == "input",
        )
        defs = schema.pop("$defs", {})
        if direction == "output":
            self._output.update([message.full_name, *defs])
        self._schemas[key] = schema
        pool = message.file.pool
        for name, nested in defs.items():
            self._schemas.setdefault(self._key(pool.FindMessageTypeByName(name), direction), nested)
        return key


def _messages(files: set[FileDescriptor]) -> Iterator[Descriptor]:
    """Every message but map entries of `files` and their imports of the same package."""
    package = next(iter(files)).package
    seen: set[str] = set()
    todo = list(files)
    while todo:
        file = todo.pop()
        if file.name in seen or file.package != package:
            continue
        seen.add(file.name)
        todo.extend(file.dependencies)
        stack = list(file.message_types_by_name.values())
        while stack:
            message = stack.pop()
            if not message.GetOptions().map_entry:
                yield message
                stack.extend(message.nested_types)


def _examples() -> dict[str, dict[str, dict[str, Any]]]:
    """Operation name -> example name -> ``{"project", "request", "response"}``."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for project in default_fixtures():
        for op_name, given in project.answers.items():
            for i, answer in enumerate(given):
                key = project.name if len(given) == 1 else f"{project.name}-{i + 1}"
                found.setdefault(op_name, {})[key] = {
                    "project": project.name,
                    "request": to_dict(answer.request),
                    "response": to_dict(answer.response),
                }
    return found
