"""The mock server's fixtures: format, loading and matching.

The format is the proto message ``projectops.v1.MockFixtures`` (``mock_fixtures.proto``) in the
protobuf JSON mapping, so the file is read by the same codec as every payload and every error
names its field path. A JSON object::

    {
      "projects": [
        {
          "project": "demo",
          "apiKey": "demo-key",
          "operations": {
            "list_rum_environments": [{"request": {}, "response": {"environments": []}}],
            "get_release_details": [
              {"request": {"version": "1.0.0"}, "response": {"summary": {}}}
            ]
          }
        }
      ]
    }

Reading is strict at every level (an unknown key, an unknown enum name or a value of the wrong
type is an error) and in three steps: the file as a ``MockFixtures``; each answer (an element of
an operation's list, a ``google.protobuf.Value``) as a ``MockAnswer``; its ``request`` and
``response`` (``Struct``) as the operation's request and response messages, the request also
validated (REQUIRED fields). The last two steps decode the answer's JSON as written, not its
``Struct`` form, so a 64-bit integer given as a number stays exact. Then the rules a message
cannot state: project names and keys are unique, operation names are the registry's, and two
answers of one operation never have the same request.

Matching: a request is decoded and validated like any request of the adapter, then the
surrounding white space of each of its strings is removed (the spec trims the version) and it is
compared with each answer's request, normalised the same way; the equal one's response is the
answer (see :meth:`MockProject.answer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, cast

from google.protobuf.message import Message

from projectops.codec import from_json, to_dict
from projectops.errors import FailedPrecondition, InvalidArgument
from projectops.registry import Operation, operations
from projectops.v1.mock_fixtures_pb2 import MockAnswer, MockFixtures
from projectops.validation import validate

__all__ = [
    "DEFAULT_FIXTURES_NAME",
    "FixtureError",
    "MockProject",
    "load_fixtures",
    "parse_fixtures",
]

M = TypeVar("M", bound=Message)

#: Name of the embedded fixtures in messages.
DEFAULT_FIXTURES_NAME = "default fixtures"


class FixtureError(ValueError):
    """A fixtures file is unreadable or invalid; the message names the file and the field path."""


@dataclass(frozen=True)
class MockProject:
    """One project of the fixtures.

    Attributes:
        name: the project's name (``"demo"``).
        answers: operation name -> {normalised request (:func:`match_key`) -> response}.
    """

    name: str
    answers: Mapping[str, Mapping[str, Message]]

    def __repr__(self) -> str:  # no key is held, but keep reprs short
        return f"MockProject({self.name!r})"

    def answer(self, op: Operation, request: Message) -> Message:
        """The response of the answer whose request equals `request` once normalised.

        Raises:
            FailedPrecondition: no answer of `op` has that request, e.g. ``project demo has no
                get_release_details answer for version "9.9.9"``.
        """
        key, shown = match_key(request)
        response = self.answers.get(op.name, {}).get(key)
        if response is None:
            raise FailedPrecondition(
                f"project {self.name} has no {op.name} answer for {shown or 'the empty request'}"
            )
        return response


def load_fixtures(path: str | Path | None = None) -> dict[str, MockProject]:
    """Read and check a fixtures file (the module docstring gives its format).

    Args:
        path: the file; ``None`` reads the embedded default fixtures (projects ``demo``, key
            ``demo-key``, and ``other``, key ``other-key``).

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: the file cannot be read, is not JSON, or breaks the format; the message is
            one line, ``<file>: <field path>: <what is wrong>``.
    """
    if path is None:
        name = DEFAULT_FIXTURES_NAME
        text = (
            resources.files(__package__)
            .joinpath("fixtures", "default.json")
            .read_text(encoding="utf-8")
        )
    else:
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise FixtureError(f"{name}: cannot read the file: {reason}") from None
    try:
        return parse_fixtures(text)
    except FixtureError as exc:
        raise FixtureError(f"{name}: {exc}") from None


def parse_fixtures(data: str | bytes | Mapping[str, Any]) -> dict[str, MockProject]:
    """Check fixtures given as JSON text or a parsed object (see :func:`load_fixtures`).

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: ``<field path>: <what is wrong>``, e.g.
            ``projects[0].operations.get_release_details[0].request.version: is required``.
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise FixtureError(f"not valid JSON: {exc}") from None
    fixtures = _decode(data, MockFixtures, "")
    raw_projects: list[dict[str, Any]] = cast(Mapping[str, Any], data)["projects"]
    by_name = {op.name: op for op in operations()}
    by_key: dict[str, MockProject] = {}
    key_index: dict[str, int] = {}
    names: dict[str, int] = {}
    for i, entry in enumerate(fixtures.projects):
        path = f"projects[{i}]"
        if entry.project in names:
            raise FixtureError(
                f"{path}.project: duplicate of projects[{names[entry.project]}].project"
            )
        if entry.api_key in key_index:
            # Say where the other one is, never what the key is.
            raise FixtureError(
                f"{path}.apiKey: duplicate of projects[{key_index[entry.api_key]}].apiKey"
            )
        names[entry.project] = key_index[entry.api_key] = i
        answers: dict[str, Mapping[str, Message]] = {}
        for op_name in sorted(entry.operations):
            op_path = f"{path}.operations.{op_name}"
            op = by_name.get(op_name)
            if op is None:
                raise FixtureError(
                    f"{op_path}: unknown operation {op_name!r}; known operations: "
                    f"{', '.join(by_name)}"
                )
            raw_answers = raw_projects[i]["operations"][op_name]
            answers[op_name] = _answers(op, raw_answers or [], op_path)
        by_key[entry.api_key] = MockProject(name=entry.project, answers=answers)
    return by_key


def _answers(op: Operation, items: list[Any], path: str) -> dict[str, Message]:
    found: dict[str, Message] = {}
    index: dict[str, int] = {}
    for j, item in enumerate(items):
        answer_path = f"{path}[{j}]"
        _decode(item, MockAnswer, answer_path)
        request = _decode(item.get("request") or {}, op.request_type, f"{answer_path}.request")
        response = _decode(
            item["response"], op.response_type, f"{answer_path}.response", validated=False
        )
        wanted, _ = match_key(request)
        if wanted in index:
            raise FixtureError(
                f"{answer_path}.request: the same request as {path}[{index[wanted]}]"
            )
        index[wanted] = j
        found[wanted] = response
    return found


def _decode(value: Any, message_type: type[M], path: str, *, validated: bool = True) -> M:
    """`value` decoded strictly (and validated) as `message_type`; errors under `path`."""
    try:
        message = from_json(value, message_type, strict=True)
        if validated:
            validate(message)
    except InvalidArgument as exc:
        parts = [_under(path, v.field, v.description) for v in exc.violations]
        raise FixtureError("; ".join(parts) or _under(path, "", exc.message)) from None
    return message


def _under(path: str, field: str, text: str) -> str:
    where = f"{path}.{field}" if path and field else path or field or "the top level"
    return f"{where}: {text}"


def match_key(request: Message) -> tuple[str, str]:
    """``(key, shown)`` of a request: the key under which it matches an answer (its JSON with
    the surrounding white space of every string removed, keys sorted) and the fields it sets,
    as shown in a no-match message (``version "9.9.9"``; empty for the empty request)."""
    data = _stripped(to_dict(request))
    shown = ", ".join(
        f"{fd.json_name} {json.dumps(data[fd.json_name], ensure_ascii=False)}"
        for fd, _ in request.ListFields()
    )
    return json.dumps(data, sort_keys=True, ensure_ascii=False), shown


def _stripped(value: Any) -> Any:
    # A walk of plain JSON, not of the message: every string is trimmed, wherever it stands.
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value
