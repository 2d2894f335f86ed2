"""Golden payloads: hand-written wire forms of the messages, one JSON file each.

``<operation>.request.json`` and ``<operation>.response.json`` for the operations that have
them (a new rpc needs none: test over :func:`stems`, not over ``projectops.operations()``), and
``error.<code>.json`` (an ``ErrorResponse``). ``released/`` holds those of version 0.1.0.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf.message import Message

import projectops
from projectops.v1 import error_pb2

GOLDEN = Path(__file__).resolve().parent
RELEASED = GOLDEN / "released"


def stems(folder: Path = GOLDEN) -> list[str]:
    """The golden files of `folder`, without ``.json``, sorted."""
    return sorted(p.name.removesuffix(".json") for p in folder.glob("*.json"))


def operations(folder: Path = GOLDEN) -> list[projectops.Operation]:
    """The operations with golden payloads in `folder`, in the registry's order."""
    names = {stem.partition(".")[0] for stem in stems(folder)} - {"error"}
    return [op for op in projectops.operations() if op.name in names]


def message_type(stem: str) -> type[Message]:
    """Today's message class of a golden file: ``<operation>.request|response`` or ``error.*``.

    Raises:
        projectops.UnknownOperationError: `stem` names no operation of the registry.
    """
    name, _, kind = stem.partition(".")
    if name == "error":
        return error_pb2.ErrorResponse
    op = projectops.operation(name)
    return {"request": op.request_type, "response": op.response_type}[kind]


def read(stem: str, folder: Path = GOLDEN) -> str:
    """The text of golden file `stem`."""
    return (folder / f"{stem}.json").read_text(encoding="utf-8")
