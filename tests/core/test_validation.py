"""REQUIRED (AIP-203) is enforced on the whole message tree."""

import json
import re
import shutil
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from google.api import field_behavior_pb2
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

import projectops
import projectops.json_schema
from projectops.mock import generate
from projectops.validation import BLANK, is_blank, violations
from tests.hypothesis_profiles import FULL_EXAMPLES, examples
from tests.synthetic import with_required_string

# An operation with a REQUIRED string field, picked by property.
OP, FIELD = with_required_string()


def request(text: str) -> Message:
    """A valid request of `OP` (its other REQUIRED fields set) with `FIELD` set to `text`."""
    message = generate(OP.request_type, "valid", minimal=True)
    setattr(message, FIELD.name, text)
    return message


@pytest.mark.parametrize("text", ["", " ", "\t\n "])
def test_a_missing_or_blank_required_string_is_a_violation(text: str) -> None:
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.validate(request(text))
    name = FIELD.json_name
    assert [(v.field, v.description) for v in info.value.violations] == [(name, "is required")]
    assert info.value.message == f"{name}: is required"


def test_a_present_required_string_passes() -> None:
    projectops.validate(request(" 1.0.0 "))


def _nested_types() -> type[Message]:
    """A schema made for this test: REQUIRED fields at several depths and kinds."""
    f = descriptor_pb2.FileDescriptorProto(
        name="validation_test.proto",
        package="vt",
        syntax="proto3",
        dependency=["google/api/field_behavior.proto"],
    )

    def field(
        msg: Any,
        name: str,
        number: int,
        kind: int,
        *,
        repeated: bool = False,
        type_name: str = "",
        required: bool = False,
        optional: bool = False,
    ) -> None:
        fd = msg.field.add(name=name, number=number, type=kind, label=3 if repeated else 1)
        if type_name:
            fd.type_name = type_name
        if optional:
            fd.proto3_optional = True
        if optional:
            msg.oneof_decl.add(name=f"_{name}")
            fd.oneof_index = len(msg.oneof_decl) - 1
        if required:
            fd.options.Extensions[field_behavior_pb2.field_behavior].append(
                field_behavior_pb2.REQUIRED
            )

    T = descriptor_pb2.FieldDescriptorProto
    leaf = f.message_type.add(name="Leaf")
    field(leaf, "display_name", 1, T.TYPE_STRING, required=True)
    field(leaf, "count", 2, T.TYPE_INT64, required=True)
    field(leaf, "limit", 3, T.TYPE_INT64, required=True, optional=True)
    root = f.message_type.add(name="Root")
    field(root, "leaf", 1, T.TYPE_MESSAGE, type_name=".vt.Leaf", required=True)
    field(root, "leaves", 2, T.TYPE_MESSAGE, type_name=".vt.Leaf", repeated=True)
    field(root, "tags", 3, T.TYPE_STRING, repeated=True, required=True)
    # The default pool already holds google/api/field_behavior.proto; the package name is unique.
    pool = descriptor_pool.Default()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("vt.Root"))


Root = _nested_types()


def test_nested_required_fields_are_reported_with_camel_case_paths() -> None:
    message = projectops.from_json(
        {"leaves": [{"displayName": "ok", "count": "1", "limit": "0"}, {"displayName": " "}]},
        Root,
    )
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.validate(message)
    assert [v.field for v in info.value.violations] == [
        "leaf",
        "leaves[1].displayName",
        "leaves[1].count",
        "leaves[1].limit",
        "tags",
    ]


def test_explicit_presence_counts_a_set_zero_as_present() -> None:
    message = projectops.from_json(
        {"leaf": {"displayName": "x", "count": "3", "limit": "0"}, "tags": ["a"]}, Root
    )
    projectops.validate(message)


# --- the server's notion of blank and the schema's REQUIRED-string pattern, character by character


def _required_string_pattern() -> re.Pattern[str]:
    pattern = projectops.json_schema.input_schema(OP)["properties"][FIELD.json_name]
    return re.compile(pattern["pattern"])


def test_blank_is_python_white_space_over_all_of_unicode() -> None:
    spaces = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert BLANK == spaces


def test_required_string_pattern_and_validate_agree_on_every_code_point() -> None:
    """What the input schema's pattern calls present is exactly what validate lets through,
    for each code point alone (U+001C..U+001F and U+0085 are blank, U+FEFF is not)."""
    pattern = _required_string_pattern()
    # The pattern is run once over all code points (each match is one present character)
    # rather than a search per code point, and is_blank is what validate decides a string by:
    # so pattern and is_blank are compared on every code point, and validate itself (a message
    # per character, the costly part) with is_blank on the whole BMP, where all of BLANK lies,
    # and on every 97th code point beyond it. The inner loop's profile (`fast`) runs validate on
    # every 4th code point of the BMP, and on each blank character and its neighbours.
    stride = FULL_EXAMPLES // examples(FULL_EXAMPLES)
    blank_and_beside = {code + step for code in map(ord, BLANK) for step in (-1, 0, 1)}
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    # What the pattern does not call present, in code point order, is the blank characters;
    # and it matched one character at a time (as many matches as characters taken out).
    rest, matches = pattern.subn("", every)
    blank = "".join(filter(is_blank, every))
    assert rest == blank, sorted(map(hex, map(ord, set(rest) ^ set(blank))))
    assert matches == len(every) - len(rest), "the pattern matches one character"
    assert not any(pattern.search(char) for char in BLANK)
    disagree: list[str] = []
    message = request("")
    bmp = [*range(0, 0xD800, stride), *range(0xE000, 0x10000, stride), *blank_and_beside]
    for code in [*bmp, *range(0x10000, len(every), 97)]:
        setattr(message, FIELD.name, every[code])
        if any(violations(message)) != is_blank(every[code]):
            disagree.append(hex(code))
    assert disagree == []
    for char in "\x1c\x1d\x1e\x1f\x85":
        assert list(violations(request(f" {char}\t")))
    projectops.validate(request("\ufeff"))


def test_the_schema_validator_agrees_on_the_characters_dialects_disagree_on() -> None:
    schema = projectops.json_schema.input_schema(OP)
    validator = jsonschema.Draft202012Validator(schema)
    for text in ["\x1c", "\x1d", "\x1e", "\x1f", "\x85", " \x85\u3000", "\ufeff", "\u200b", "a"]:
        blank = is_blank(text)
        assert validator.is_valid({FIELD.json_name: text}) is not blank, repr(text)


@pytest.mark.slow
def test_ecmascript_reads_the_pattern_as_validate_does() -> None:
    """OpenAPI tools (Prism, Redocly, openapi-typescript's users) run the pattern as an
    ECMA-262 regex, with and without the `u` flag: it must agree with validate there too."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = """
const source = process.argv[1];
const plain = new RegExp(source), unicode = new RegExp(source, "u");
const present = [];
for (let code = 0; code <= 0x10ffff; code++) {
  if (code >= 0xd800 && code <= 0xdfff) continue;
  const char = String.fromCodePoint(code);
  const a = plain.test(char), b = unicode.test(char);
  if (a !== b) { console.log("flags disagree at " + code); process.exit(1); }
  if (!a) present.push(code);
}
console.log(JSON.stringify(present));
"""
    done = subprocess.run(
        [node, "-e", script, _required_string_pattern().pattern],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    blank_codes = json.loads(done.stdout)
    assert blank_codes == [ord(c) for c in BLANK]


# --- REQUIRED on every scalar kind --------------------------------------------------------------

_T = descriptor_pb2.FieldDescriptorProto
#: Each scalar kind of the JSON mapping -> a value that is not its default.
_SCALARS = {
    _T.TYPE_DOUBLE: 1.5,
    _T.TYPE_FLOAT: 1.5,
    _T.TYPE_INT32: -1,
    _T.TYPE_INT64: -1,
    _T.TYPE_UINT32: 1,
    _T.TYPE_UINT64: 1,
    _T.TYPE_SINT32: -1,
    _T.TYPE_SINT64: -1,
    _T.TYPE_FIXED32: 1,
    _T.TYPE_FIXED64: 1,
    _T.TYPE_SFIXED32: -1,
    _T.TYPE_SFIXED64: -1,
    _T.TYPE_BOOL: True,
    _T.TYPE_STRING: "x",
    _T.TYPE_BYTES: b"x",
    _T.TYPE_ENUM: 1,
}


def _kinds_type() -> type[Message]:
    """A message made for this test: per scalar kind a REQUIRED field `k<type>` without
    presence and a REQUIRED proto3 ``optional`` one, `p<type>`."""
    f = descriptor_pb2.FileDescriptorProto(
        name="validation_kinds_test.proto",
        package="vtk",
        syntax="proto3",
        dependency=["google/api/field_behavior.proto"],
    )
    f.enum_type.add(name="Kind").value.add(name="KIND_UNSPECIFIED", number=0)
    f.enum_type[0].value.add(name="KIND_ONE", number=1)
    kinds = f.message_type.add(name="Kinds")
    for kind in _SCALARS:
        for prefix, optional in (("k", False), ("p", True)):
            fd = kinds.field.add(name=f"{prefix}{kind}", number=len(kinds.field) + 1, type=kind)
            fd.label = _T.LABEL_OPTIONAL
            if kind == _T.TYPE_ENUM:
                fd.type_name = ".vtk.Kind"
            if optional:
                fd.proto3_optional = True
                kinds.oneof_decl.add(name=f"_{fd.name}")
                fd.oneof_index = len(kinds.oneof_decl) - 1
            fd.options.Extensions[field_behavior_pb2.field_behavior].append(
                field_behavior_pb2.REQUIRED
            )
    pool = descriptor_pool.Default()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("vtk.Kinds"))


Kinds = _kinds_type()


def _required_violations(message: Message) -> list[str]:
    try:
        projectops.validate(message)
    except projectops.InvalidArgument as error:
        return [v.field for v in error.violations]
    return []


@pytest.mark.parametrize("kind", list(_SCALARS), ids=lambda k: _T.Type.Name(k)[5:].lower())
def test_required_holds_on_every_scalar_kind(kind: int) -> None:
    plain, optional = f"k{kind}", f"p{kind}"
    others = {f"{p}{k}": v for k, v in _SCALARS.items() if k != kind for p in "kp"}
    # Unset, and the default value without presence: missing.
    assert _required_violations(Kinds(**others)) == [plain, optional]
    # The default value set with presence: present (§4.1), but for a string: blank (§4.2).
    zero = Kinds(**others, **{optional: type(_SCALARS[kind])()})
    blank = kind == _T.TYPE_STRING
    assert _required_violations(zero) == [plain, optional] if blank else [plain]
    # A value: present.
    assert (
        _required_violations(Kinds(**others, **{plain: _SCALARS[kind], optional: _SCALARS[kind]}))
        == []
    )
