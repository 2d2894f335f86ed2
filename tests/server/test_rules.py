"""The adapter checks the schema's rules (docs/contract.md §4.6): every request, 400 with one
violation per broken rule; its own responses when `validate_responses` is on, 500 and a log line."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import pytest
from google.protobuf.message import Message

from projectops.codec import to_dict
from projectops.conventions import VALIDATE_RESPONSES_ENV
from projectops.fixtures import default_fixtures
from projectops.registry import Operation
from projectops.server import OperationsServiceHandler, ServerCallNext, create_app
from projectops.validation import is_required
from tests.server.test_adapter import KEYS, call, error_of
from tests.synthetic import (
    minimal_response,
    valid_request,
    with_max_length_string,
    with_required_answer_field,
)

OP, FIELD, MAX = with_max_length_string()
ANSWERING, ALWAYS_SET = with_required_answer_field()


def serving(op: Operation, answer: Message) -> Any:
    """A service whose `op` answers `answer` to every request."""

    class Service(OperationsServiceHandler):
        pass

    setattr(Service, op.name, lambda self, request, context: answer)
    return Service()


def body(op: Operation, **fields: Any) -> str:
    return json.dumps({**to_dict(valid_request(op)), **fields})


def test_a_string_over_its_maximum_length_is_400_naming_the_field() -> None:
    app = create_app(serving(OP, minimal_response(OP)), authenticate=KEYS.get)
    response = call(app, OP.path, body(OP, **{FIELD.json_name: "1" * 100_000}))
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    assert error["violations"] == [
        {"field": FIELD.json_name, "description": f"must be at most {MAX} characters"}
    ]
    assert error["message"] == f"{FIELD.json_name}: must be at most {MAX} characters"


def test_a_string_at_its_maximum_length_is_served() -> None:
    app = create_app(serving(OP, minimal_response(OP)), authenticate=KEYS.get)
    assert call(app, OP.path, body(OP, **{FIELD.json_name: "1" * MAX})).status_code == 200


def test_each_broken_rule_is_one_violation_required_first() -> None:
    if not is_required(FIELD):
        pytest.skip("the field with a maximum length is not REQUIRED")
    app = create_app(serving(OP, minimal_response(OP)), authenticate=KEYS.get)
    error = error_of(call(app, OP.path, body(OP, **{FIELD.json_name: " " * (MAX + 1)})))
    assert [v["field"] for v in error["violations"]] == [FIELD.json_name, FIELD.json_name]
    assert [v["description"] for v in error["violations"]] == [
        "is required",
        f"must be at most {MAX} characters",
    ]


@pytest.mark.parametrize(
    ("asked", "env", "checked"),
    [
        (False, "1", False),
        (True, None, True),
        (None, "1", True),  # the pytest plugin's setting
        (None, None, False),  # production's default
        (None, "0", False),
    ],
)
def test_answers_are_checked_when_asked_or_under_the_plugin(
    asked: bool | None, env: str | None, checked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv(VALIDATE_RESPONSES_ENV, raising=False)
    else:
        monkeypatch.setenv(VALIDATE_RESPONSES_ENV, env)
    app = create_app(
        serving(ANSWERING, ANSWERING.response_type()),
        authenticate=KEYS.get,
        validate_responses=asked,
    )
    assert call(app, ANSWERING.path, body(ANSWERING)).status_code == (500 if checked else 200)


def test_the_pytest_plugin_turns_the_check_on() -> None:
    """This session runs with the plugin (autoloaded, as in a team's own test session)."""
    import _projectops_pytestplugin

    assert os.environ.get(VALIDATE_RESPONSES_ENV) == "1"
    assert _projectops_pytestplugin.VALIDATE_RESPONSES_ENV == VALIDATE_RESPONSES_ENV


async def passing_on(request: Message, context: Any, call_next: ServerCallNext) -> Any:
    """An interceptor that passes the handler's response on as it came."""
    return await call_next(request, context)


@pytest.mark.parametrize("interceptors", [[], [passing_on]], ids=["alone", "passed on"])
def test_an_answer_breaking_a_rule_is_500_and_logged_as_the_handlers(
    caplog: pytest.LogCaptureFixture, interceptors: list[Any]
) -> None:
    """An interceptor that passes the handler's response on is not blamed for its rules."""
    app = create_app(
        serving(ANSWERING, ANSWERING.response_type()),
        authenticate=KEYS.get,
        validate_responses=True,
        interceptors=interceptors,
    )
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        response = call(app, ANSWERING.path, body(ANSWERING), key="key-a")
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "internal" and error["violations"] == []
    # The caller learns nothing of it (the operation's name may hold the field's).
    assert f"{ALWAYS_SET.json_name}: is required" not in error["message"]
    assert f"{ALWAYS_SET.json_name}: is required" in caplog.text
    assert f"the answer of the handler of {ANSWERING.name} (its rules) failed" in caplog.text
    assert "an interceptor of" not in caplog.text
    assert "key-a" not in caplog.text


def test_an_interceptors_own_answer_breaking_a_rule_is_logged_as_the_interceptors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def replacing(request: Message, context: Any, call_next: ServerCallNext) -> Any:
        await call_next(request, context)
        return ANSWERING.response_type()

    app = create_app(
        serving(ANSWERING, minimal_response(ANSWERING)),
        authenticate=KEYS.get,
        validate_responses=True,
        interceptors=[replacing],
    )
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        response = call(app, ANSWERING.path, body(ANSWERING))
    assert response.status_code == 500
    assert f"the answer of an interceptor of {ANSWERING.name} (its rules) failed" in caplog.text


def test_an_answer_keeping_every_rule_is_sent_when_checked() -> None:
    """The default fixtures' answers keep the rules (tests/core/test_rules.py)."""
    answers = [
        a.response
        for project in default_fixtures()
        for a in project.answers.get(ANSWERING.name, ())
        if a.error is None
    ]
    if not answers:
        pytest.skip(f"the default fixtures hold no answer of {ANSWERING.name}")
    app = create_app(serving(ANSWERING, answers[0]), authenticate=KEYS.get, validate_responses=True)
    response = call(app, ANSWERING.path, body(ANSWERING))
    assert response.status_code == 200, response.text
    assert response.json() == to_dict(answers[0])
