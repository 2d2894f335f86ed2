"""The fast path's plans (``projectops._fastcodec._plans``): built once per message type from
its descriptor, shared by both directions, safe to build from many threads at once; and the
package's layout (one job per module, no circle, none over 600 lines)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from google.protobuf import json_format, message_factory

from projectops import _fastcodec
from projectops._fastcodec._decode import decoding_plan
from projectops._fastcodec._encode import encoding_plan
from projectops._fastcodec._plans import MESSAGE, REPEATED, plan_of
from tests.core.test_codec_differential import OPTIONS_OUT, build_test_schema, schema_class

PACKAGE = Path(_fastcodec.__file__).resolve().parent
MODULES = ("_decode", "_encode", "_float32", "_plans", "_timefmt")
BOUND = 30.0  # seconds for the threads to finish, generous on a busy 2-core machine


def test_one_plan_per_type_shared_by_both_directions() -> None:
    tree = schema_class("fctest.Tree").DESCRIPTOR
    plan = plan_of(tree)
    assert plan_of(tree) is plan
    assert decoding_plan(tree) is plan and encoding_plan(tree) is plan
    children = next(f for f in plan.fields if f.name == "children")
    assert (children.kind, children.shape) == (MESSAGE, REPEATED)
    assert children.aux is plan  # a recursive type meets its own plan
    assert [f.json_name for f in plan.fields] == [f.json_name for f in tree.fields]


def test_many_threads_meeting_new_types_at_once_all_get_the_right_answer() -> None:
    # A fresh pool: types no plan exists for yet, recursive and with every kind inside.
    pool = build_test_schema()
    tree: Any = message_factory.GetMessageClass(pool.FindMessageTypeByName("fctest.Tree"))
    message = tree(label="root")
    message.children.add(label="child").wkts.timestamp.seconds = 1_700_000_000
    message.parent.parent.label = "grandparent"
    data = json_format.MessageToDict(message, **OPTIONS_OUT)
    start = threading.Barrier(8)
    results: list[Any] = []

    def work(encode_first: bool) -> None:
        start.wait(BOUND)
        encoded = _fastcodec.to_dict(message) if encode_first else None
        decoded = _fastcodec.from_dict(data, tree, strict=True)
        if not encode_first:
            encoded = _fastcodec.to_dict(message)
        results.append((encoded, decoded, "".join(_fastcodec.iter_json(message, None))))

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND)
    assert not any(thread.is_alive() for thread in threads)
    assert len(results) == 8
    for encoded, decoded, text in results:
        assert encoded == data
        assert decoded == message
        assert json_format.Parse(text, tree()) == message


def test_each_module_has_one_job_and_none_is_over_600_lines() -> None:
    found = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert found == sorted(MODULES)
    for name in MODULES:
        lines = (PACKAGE / f"{name}.py").read_text().count("\n")
        assert lines <= 600, f"{name}.py has {lines} lines"
