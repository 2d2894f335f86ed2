"""What a handler learns about the request besides its message: :class:`RequestContext`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from projectops.registry import Operation

__all__ = ["RequestContext"]

ProjectT = TypeVar("ProjectT")


@dataclass(frozen=True)
class RequestContext(Generic[ProjectT]):
    """The context of one request: `project`, what ``authenticate`` returned for the key
    (docs/contract.md §2.2); `operation` served; `headers`, names in lower case, the key's
    value ``***``."""

    project: ProjectT
    operation: Operation
    headers: Mapping[str, str]
