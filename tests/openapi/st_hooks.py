"""Schemathesis hooks (``SCHEMATHESIS_HOOKS=st_hooks``) for the runs of test_openapi_schemathesis.

``schemathesis.toml`` lets positive (schema-valid) data be answered 400, because a business rule
(``failed_precondition``: no release with that version in the project) refuses most valid
requests: no schema can say which versions exist. This check takes back the rest of that
leniency: a 400 to valid data must be ``failed_precondition``, never ``invalid_argument`` (that
would mean the document accepts what the server calls malformed), but for a request that breaks
only rules the document says in words (``json_schema.rules_in_words``: a bound of a 64-bit
integer, a CEL rule), which no keyword can refuse, or names a field by its proto name.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import schemathesis
from schemathesis.core import NotSet


@schemathesis.check
def valid_data_refused_only_by_business_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        code = json.loads(response.text).get("code")
    except ValueError:
        code = None
    if code == "failed_precondition" or not _is_valid(case):
        return None  # a business rule; or data Schemathesis's coverage phase took for valid
    if not _breaks_only_rules_in_words(case):
        raise AssertionError(
            f"schema-valid data answered 400 {code!r}, not failed_precondition: {response.text}"
        )
    return None


@functools.cache
def _request_validator(path: str) -> jsonschema.Draft202012Validator:
    """The request schema of the served (default) document at `path`, components resolved."""
    from projectops import openapi

    doc = openapi.document()
    body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**body, "components": doc["components"]})


def _body(case: Any) -> Any:
    """The body of `case`: no body reads as {} (docs/contract.md §1.2)."""
    if isinstance(case.body, NotSet):
        return {}
    return case.body


def _is_valid(case: Any) -> bool:
    """Whether the body of `case` is valid for its schema: Schemathesis's coverage phase marks
    as positive some values that a `not` refuses (a REQUIRED count of "0")."""
    return _request_validator(case.path).is_valid(_body(case))


def _breaks_only_rules_in_words(case: Any) -> bool:
    """Whether the request of `case` breaks rules of its schema, each one said in words only."""
    import projectops
    from projectops.json_schema import rules_in_words
    from projectops.validation import rule_violations

    op = projectops.operation(case.path)
    body = _body(case)
    if not isinstance(body, dict):
        return False
    if _proto_names(op.request_type.DESCRIPTOR) & _keys(body):
        # A field by its proto name, which json_format reads (docs/contract.md §3.2): the
        # document names fields by their JSON names and takes any other property.
        return True
    try:
        broken = rule_violations(projectops.from_json(json.dumps(body), op.request_type))
    except projectops.InvalidArgument:
        return False
    # A CEL rule by its id, as a violation names it.
    names = rules_in_words(op.request_type.DESCRIPTOR)
    in_words = {name.removeprefix("cel[").removesuffix("]") for name in names}
    return bool(broken) and all(v.rule in in_words for v in broken)


def _proto_names(message: Any) -> set[str]:
    """The proto names, other than the JSON names, of the fields of `message` and below it."""
    names, pending = set(), [message]
    for descriptor in pending:  # it grows as it goes: each message below once
        for fd in descriptor.fields:
            if fd.name != fd.json_name:
                names.add(fd.name)
            if fd.message_type is not None and fd.message_type not in pending:
                pending.append(fd.message_type)
    return names


def _keys(value: Any) -> set[str]:
    """Every key of every JSON object in `value`."""
    if isinstance(value, dict):
        return set(value).union(*map(_keys, value.values()))
    if isinstance(value, list):
        return set().union(*map(_keys, value))
    return set()
