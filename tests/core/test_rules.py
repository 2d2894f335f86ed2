"""The schema's protovalidate rules: read from the descriptors (projectops.rules) and checked by
the official engine with JSON paths (projectops.validation.rule_violations), docs/contract.md §4.6.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import protovalidate
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

import projectops
from projectops import rules
from projectops._wire import value_form
from projectops.descriptions import description
from projectops.fixtures import default_fixtures
from projectops.rules import NOT_BLANK_RULE_ID
from projectops.v1 import error_pb2, mock_fixtures_pb2, operations_pb2, release_pb2
from projectops.validation import (
    BLANK,
    EVALUATION_RULE,
    MAX_RULED_ELEMENTS,
    REQUIRED_RULE,
    RuleViolation,
    is_blank,
    is_required,
    required_rules,
    rule_violations,
)

SHA = "0123456789abcdef0123456789abcdef01234567"


def messages() -> Iterator[Descriptor]:
    """Every message type the operations reach, and the fixtures' and the error body's, once."""
    seen: set[str] = set()
    ops = projectops.operations()
    roots = [m.DESCRIPTOR for op in ops for m in (op.request_type, op.response_type)]
    roots += [mock_fixtures_pb2.MockFixtures.DESCRIPTOR, error_pb2.ErrorResponse.DESCRIPTOR]
    todo = list(roots)
    while todo:
        message = todo.pop()
        if message.full_name in seen:
            continue
        seen.add(message.full_name)
        yield message
        todo += [m for fd in message.fields if (m := value_form(fd).message) is not None]


def fields() -> Iterator[FieldDescriptor]:
    for message in messages():
        yield from message.fields


def response(**summary: object) -> operations_pb2.GetReleaseDetailsResponse:
    """A response keeping every rule, with `summary`'s release fields replaced."""
    return operations_pb2.GetReleaseDetailsResponse(
        summary=release_pb2.ReleaseSummary(
            release=release_pb2.Release(**{"version": "1.0", "git_sha": SHA, **summary}),  # type: ignore[arg-type]
            open_issues=release_pb2.OpenIssueStatistics(),
        ),
        detailed_results=release_pb2.ReleaseDetailedResults(),
    )


# --- REQUIRED, declared for every engine --------------------------------------------------------


def test_required_is_restated_for_protovalidate_and_read_once() -> None:
    """A REQUIRED field declares ``(buf.validate.field).required`` (and, a string, the blank
    rule) besides `google.api.field_behavior`, and no other field does (docs/contract.md §4.1);
    the readers of the rules leave the restatement out: REQUIRED is shown and checked as one."""
    fds = list(fields())
    assert [
        fd.full_name for fd in fds if rules.rule_items(fd, restated=True) != required_rules(fd)
    ] == []
    assert any(required_rules(fd) for fd in fds)  # the test's own check
    read = [fd.full_name for fd in fds if set(rules.rule_items(fd)) & set(rules.REQUIRED_ITEMS)]
    assert read == []
    assert [
        fd.full_name for fd in fds for r in rules.cel_rules(fd) if r.id == NOT_BLANK_RULE_ID
    ] == []


@pytest.mark.parametrize("version", ["", " ", "\t\u3000\u2028"])
def test_protovalidate_alone_requires_a_version_and_a_summary(version: str) -> None:
    """The engine by itself, as another language's protovalidate reads the same descriptors:
    a missing or blank REQUIRED string and a missing REQUIRED message are violations."""
    request = operations_pb2.GetReleaseDetailsRequest(version=version)
    found = [
        (v.proto.field.elements[0].field_name, v.proto.rule_id)
        for v in protovalidate.collect_violations(request)
    ]
    assert found == [("version", "required" if not version else NOT_BLANK_RULE_ID)]
    assert (
        protovalidate.collect_violations(operations_pb2.GetReleaseDetailsRequest(version="1.0"))
        == []
    )
    response = operations_pb2.GetReleaseDetailsResponse(detailed_results={})
    found = [
        (v.proto.field.elements[0].field_name, v.proto.rule_id)
        for v in protovalidate.collect_violations(response)
    ]
    assert found == [("summary", "required")]


def test_the_blank_rule_agrees_with_is_blank_on_every_white_space_character() -> None:
    """The CEL rule's class is the characters of §4.2, no more, no fewer, as the engine reads it."""
    for code in [*map(ord, BLANK), 0xFEFF, 0x200B, ord("x")]:
        request = operations_pb2.GetReleaseDetailsRequest(version=chr(code) * 2)
        broken = bool(protovalidate.collect_violations(request))
        assert broken == is_blank(chr(code)), hex(code)


def test_every_promise_of_a_comment_is_a_rule() -> None:
    """ "Always set" is REQUIRED; "Never empty" is REQUIRED or a minimum length; "unique" and
    "hexadecimal digits" have a rule; the counts of a message of counts have a minimum."""
    broken = []
    for fd in fields():
        text = description(fd)
        kind = rules.rule_kind(fd)
        if "Always set" in text and not is_required(fd):
            broken.append(f"{fd.full_name}: 'Always set' but not REQUIRED")
        if "Never empty" in text and not (
            is_required(fd) or (kind and kind[0] == "string" and kind[1].min_len >= 1)
        ):
            broken.append(f"{fd.full_name}: 'Never empty' without min_len or REQUIRED")
        if "hexadecimal digits" in text and not (kind and kind[1].pattern):
            broken.append(f"{fd.full_name}: a SHA without a pattern")
        if re.search(r"\bNumber of\b|\bcount\b", text, re.I) and fd.type == fd.TYPE_INT64:
            if fd.name.endswith("_id"):
                continue
            if not (kind and kind[0] == "int64" and kind[1].HasField("gte")):
                broken.append(f"{fd.full_name}: a count without a minimum")
    assert broken == []


def test_rules_read_the_vendored_validate_proto() -> None:
    version = operations_pb2.GetReleaseDetailsRequest.DESCRIPTOR.fields_by_name["version"]
    kind, string = rules.rule_kind(version)  # type: ignore[misc]
    assert kind == "string" and string.max_len == 128
    unique = rules.field_rules(
        release_pb2.ReleaseDetailedResults.DESCRIPTOR.fields_by_name["issues"]
    ).cel
    assert [r.expression for r in unique] == ["this.map(i, i.issue_id).unique()"]
    assert rules.rule_items(release_pb2.OpenIssueStatistics.DESCRIPTOR)
    plain = release_pb2.Release.DESCRIPTOR.fields_by_name["focus_areas"]
    assert rules.field_rules(plain) is None and rules.rule_kind(plain) is None


# --- rule_violations --------------------------------------------------------------------------


def test_a_message_keeping_every_rule_has_no_violation() -> None:
    assert rule_violations(response()) == []
    assert rule_violations(operations_pb2.GetReleaseDetailsRequest(version="1.2.0")) == []


def test_the_default_fixtures_keep_every_rule() -> None:
    for project in default_fixtures():
        for answers in project.answers.values():
            for answer in answers:
                assert rule_violations(answer.request) == []
                assert rule_violations(answer.response) == []


def test_a_long_version_breaks_its_maximum_length() -> None:
    request = operations_pb2.GetReleaseDetailsRequest(version="1" * 100_000)
    assert rule_violations(request) == [
        RuleViolation("version", "must be at most 128 characters", "string.max_len")
    ]


def test_missing_required_fields_come_first_named_by_json_path() -> None:
    answer = operations_pb2.GetReleaseDetailsResponse(
        summary=release_pb2.ReleaseSummary(release=release_pb2.Release(version="1"))
    )
    assert rule_violations(answer) == [
        RuleViolation("summary.openIssues", "is required", REQUIRED_RULE),
        RuleViolation("detailedResults", "is required", REQUIRED_RULE),
    ]


@pytest.mark.parametrize("sha", ["xyz", SHA.upper(), SHA + "0", " " + SHA[1:]])
def test_a_sha_that_is_not_40_lowercase_hex_digits_breaks_its_pattern(sha: str) -> None:
    (found,) = rule_violations(response(git_sha=sha))
    assert (found.field, found.rule) == ("summary.release.gitSha", "string.pattern")
    assert "^([0-9a-f]{40})?$" in found.description


def test_an_empty_sha_keeps_the_pattern() -> None:
    assert rule_violations(response(git_sha="")) == []


def test_paths_of_list_elements_and_cel_messages() -> None:
    answer = response()
    issues = answer.detailed_results.issues
    issues.add(issue_id=7, title="a")
    issues.add(issue_id=7, title="")
    assert rule_violations(answer) == [
        RuleViolation(
            "detailedResults.issues", "holds each issueId once", "issues.unique_issue_id"
        ),
        RuleViolation(
            "detailedResults.issues[1].title", "must be at least 1 characters", "string.min_len"
        ),
    ]


def test_a_message_rule_names_the_message() -> None:
    answer = response()
    answer.summary.open_issues.total = 1
    assert rule_violations(answer) == [
        RuleViolation(
            "summary.openIssues",
            "total must equal active + inProgress + blocked",
            "open_issue_statistics.total_by_status",
        )
    ]


def test_a_rule_of_the_top_level_message_has_the_empty_path() -> None:
    answer = mock_fixtures_pb2.MockAnswer()  # neither response nor error
    found = rule_violations(answer)
    assert [(v.field, v.rule) for v in found] == [("", "mock_answer.response_or_error")]
    assert found[0].description == "exactly one of response and error must be set"


def test_negative_counts_break_their_minimum() -> None:
    answer = response()
    answer.summary.open_issues.total = -1
    answer.summary.open_issues.active = -1
    found = rule_violations(answer)
    assert (
        RuleViolation("summary.openIssues.total", "must be greater than or equal to 0", "int64.gte")
        in found
    )


def test_a_rule_the_engine_cannot_evaluate_is_a_violation() -> None:
    answer = response()
    stats = answer.summary.open_issues
    stats.total, stats.active, stats.in_progress = 1, 2**63 - 1, 1  # the CEL sum overflows
    (found,) = rule_violations(answer)
    assert found.rule == EVALUATION_RULE and found.field == ""
    assert "overflow" in found.description


def ruled_lists() -> Iterator[tuple[Descriptor, FieldDescriptor]]:
    """Every list of the schema that a CEL rule may iterate over, with the message holding it."""
    for message in messages():
        for fd in message.fields:
            if fd.is_repeated and rules.cel_rules(fd):
                yield message, fd


def holding(message: Descriptor, fd: FieldDescriptor, count: int) -> Message:
    """A `message` whose list `fd` holds `count` zero elements (empty messages, "", 0)."""
    held = GetMessageClass(message)()
    items = getattr(held, fd.name)
    for _ in range(count):
        if fd.message_type is not None:
            items.add()
        else:
            items.append(
                {FieldDescriptor.TYPE_STRING: "", FieldDescriptor.TYPE_BYTES: b""}.get(fd.type, 0)
            )
    return held


def test_the_schema_has_lists_a_cel_rule_iterates_over() -> None:
    assert list(ruled_lists())  # else the tests below test nothing


@pytest.mark.parametrize("message", list(messages()), ids=lambda message: message.full_name)
def test_no_message_level_cel_rule_iterates_over_a_list(message: Descriptor) -> None:
    # rule_violations bounds the lists a rule of their own iterates over; a message-level rule
    # that iterated (over a list of its own or one deeper) would escape that bound.
    for rule in rules.cel_rules(message):
        macros = re.findall(r"\.(map|filter|all|exists|exists_one|unique)\(", rule.expression)
        assert not macros, (rule.id, rule.expression)


@pytest.mark.parametrize("held", list(ruled_lists()), ids=lambda held: held[1].full_name)
def test_a_list_too_long_for_the_engine_is_one_evaluation_violation_and_the_engine_is_not_called(
    held: tuple[Descriptor, FieldDescriptor], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine's map() costs the square of a list's length: 9,000 elements took 1.3 GB.
    message, fd = held
    monkeypatch.setattr(protovalidate, "collect_violations", None)  # a call would raise
    count = MAX_RULED_ELEMENTS + 1
    found = rule_violations(holding(message, fd, count))
    most = f"{MAX_RULED_ELEMENTS:,} elements"
    rules_over = len(rules.cel_rules(fd))
    under = f" under {rules_over} CEL rules" if rules_over > 1 else ""
    said = f"{count:,} elements{under}, more than the {most} a CEL rule is evaluated over"
    assert [v for v in found if v.rule != REQUIRED_RULE] == [
        RuleViolation(fd.json_name, said, EVALUATION_RULE)
    ]
    # Under another message, the list is found with its path.
    for parent in messages():
        for outer in parent.fields:
            if outer.message_type is message and not outer.is_repeated:
                nested = GetMessageClass(parent)()
                getattr(nested, outer.name).CopyFrom(holding(message, fd, count))
                broken = [v for v in rule_violations(nested) if v.rule == EVALUATION_RULE]
                assert broken == [
                    RuleViolation(f"{outer.json_name}.{fd.json_name}", said, EVALUATION_RULE)
                ]


def most_elements(fd: FieldDescriptor) -> int:
    """The most elements list `fd` may hold alone to be given to the engine: each of its CEL
    rules is one more pass of the square's cost."""
    return math.isqrt(MAX_RULED_ELEMENTS**2 // len(rules.cel_rules(fd)))


def test_a_list_of_the_most_elements_is_given_to_the_engine() -> None:
    # Under one rule, the most the budget allows is MAX_RULED_ELEMENTS itself.
    message, fd = next((m, f) for m, f in ruled_lists() if len(rules.cel_rules(f)) == 1)
    assert most_elements(fd) == MAX_RULED_ELEMENTS
    found = rule_violations(holding(message, fd, most_elements(fd)))
    assert EVALUATION_RULE not in {v.rule for v in found}
    # Its elements are judged: the rule over the list (or theirs) is what breaks, if anything.
    assert all(v.field.startswith(fd.json_name) or v.rule == REQUIRED_RULE for v in found)


def test_lists_that_together_cost_more_than_one_of_the_most_elements_are_not_given_either(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each list within the bound, but the engine's cost adds up (20 lists of 2,000: 2.6 s).
    monkeypatch.setattr(protovalidate, "collect_violations", None)  # a call would raise
    lists_of_lists = [
        (parent, outer, message, fd)
        for message, fd in ruled_lists()
        for parent in messages()
        for outer in parent.fields
        if outer.message_type is message and outer.is_repeated
    ]
    assert lists_of_lists  # the schema has lists of messages holding a ruled list
    for parent, outer, message, fd in lists_of_lists:
        held = GetMessageClass(parent)()
        for _ in range(2):
            getattr(held, outer.name).add().CopyFrom(holding(message, fd, MAX_RULED_ELEMENTS))
        ruled = 3 if outer in {f for _, f in ruled_lists()} else 2
        broken = [v for v in rule_violations(held) if v.rule != REQUIRED_RULE]
        assert broken == [RuleViolation("", too_costly(ruled), EVALUATION_RULE)], outer.full_name


def too_costly(lists: int) -> str:
    cost = f"costing together more than one list of {MAX_RULED_ELEMENTS:,} under one rule"
    return f"lists that CEL rules iterate over ({lists:,}), {cost}"


def test_a_list_with_several_cel_rules_counts_each_of_them() -> None:
    # Each rule is one more map() over the list: two rules over 2,200 elements cost the engine
    # more than one over 3,000. The list is named, with its rules, as one too long is.
    several = [(message, fd) for message, fd in ruled_lists() if len(rules.cel_rules(fd)) > 1]
    if not several:
        pytest.skip("no list of the schema has several CEL rules")
    for message, fd in several:
        most, count = most_elements(fd), len(rules.cel_rules(fd))
        assert EVALUATION_RULE not in {v.rule for v in rule_violations(holding(message, fd, most))}
        found = rule_violations(holding(message, fd, most + 1))
        over = f"more than the {MAX_RULED_ELEMENTS:,} elements a CEL rule is evaluated over"
        said = f"{most + 1:,} elements under {count} CEL rules, {over}"
        assert [v for v in found if v.rule == EVALUATION_RULE] == [
            RuleViolation(fd.json_name, said, EVALUATION_RULE)
        ]
