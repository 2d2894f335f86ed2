"""The mock's partial matching (docs/mock.md) against its definition, on a request of three
fields: an exact answer first, else the first partial answer in file order whose set fields the
request holds with the same values. The index keeps one table per distinct set of field names;
three and more such groups are where an index can answer a later group's match first."""

from __future__ import annotations

import itertools
import json

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from projectops import FailedPrecondition
from projectops.fixtures import FixtureResponse, request_key
from projectops.mock._matching import MockProject
from projectops.registry import Operation, operation_of

#: The request's fields, all strings; a value of "" leaves one unset.
FIELDS = ("alpha", "beta", "gamma")


def _operation() -> Operation:
    file = descriptor_pb2.FileDescriptorProto(
        name="synthetic/v1/match.proto", package="synthetic.v1", syntax="proto3"
    )
    request = file.message_type.add(name="MatchRequest")
    for number, name in enumerate(FIELDS, start=1):
        request.field.add(
            name=name,
            number=number,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
            json_name=name,
        )
    file.message_type.add(name="MatchResponse").field.add(
        name="answer",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        json_name="answer",
    )
    file.service.add(name="S").method.add(
        name="Match",
        input_type=".synthetic.v1.MatchRequest",
        output_type=".synthetic.v1.MatchResponse",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return operation_of(pool.FindServiceByName("synthetic.v1.S").methods_by_name["Match"])


OP = _operation()
REQUEST = message_factory.GetMessageClass(OP.request_type.DESCRIPTOR)
RESPONSE = message_factory.GetMessageClass(OP.response_type.DESCRIPTOR)


def _request(values: tuple[str, ...]) -> Message:
    return REQUEST(**dict(zip(FIELDS, values, strict=True)))


def _answers(*listed: tuple[tuple[str, ...], bool]) -> tuple[FixtureResponse, ...]:
    """Fixture responses of (request values, partial), each answering its index in the list."""
    return tuple(
        FixtureResponse(
            _request(values),
            RESPONSE(answer=str(i)),
            request_key(_request(values)),
            partial=partial,
        )
        for i, (values, partial) in enumerate(listed)
    )


#: Answers in file order: partial ones of five different groups of names (the larger groups
#: first, so each is someone's first match), a group with two values and one listed twice, and
#: one exact answer.
ANSWERS = _answers(
    (("1", "2", ""), True),
    (("", "2", "3"), True),
    (("", "", "3"), True),
    (("1", "", ""), True),
    (("", "2", ""), True),
    (("2", "", ""), True),
    (("1", "", ""), True),  # never answers: the second of its group with these values
    (("2", "2", "2"), False),
)


def _by_definition(values: tuple[str, ...]) -> int | None:
    """The response docs/mock.md says a request gets, by a scan of every response."""
    for i, answer in enumerate(ANSWERS):
        if not answer.partial and answer.key == request_key(_request(values)):
            return i
    sent = dict(zip(FIELDS, values, strict=True))
    for i, answer in enumerate(ANSWERS):
        wanted = {fd.name: v for fd, v in answer.request.ListFields()}
        if answer.partial and all(sent[k] == v for k, v in wanted.items()):
            return i
    return None


@pytest.mark.parametrize("values", list(itertools.product(("", "1", "2", "3"), repeat=3)))
def test_a_request_gets_the_first_answer_that_matches_it(values: tuple[str, ...]) -> None:
    project = MockProject("p", {OP.name: ANSWERS}, generate=False)
    expected = _by_definition(values)
    if expected is None:
        with pytest.raises(FailedPrecondition):
            project.reply(OP, _request(values))
    else:
        reply = project.reply(OP, _request(values))
        assert json.loads(reply.body) == {"answer": str(expected)}


def test_the_grid_reaches_every_answer_that_can_answer() -> None:
    # The test's own check: each response but the shadowed one is someone's first match, and
    # some requests match three groups at once.
    grid = list(itertools.product(("", "1", "2", "3"), repeat=3))
    assert {_by_definition(v) for v in grid} == {None, 0, 1, 2, 3, 4, 5, 7}
    assert _by_definition(("1", "2", "3")) == 0  # five groups match it
    assert _by_definition(("3", "2", "3")) == 1  # three groups
    assert _by_definition(("1", "", "3")) == 2  # two groups
