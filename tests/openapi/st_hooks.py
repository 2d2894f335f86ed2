"""Schemathesis hooks (``SCHEMATHESIS_HOOKS=st_hooks``) for the runs of test_openapi_schemathesis.

``schemathesis.toml`` lets positive (schema-valid) data be answered 400, because a business rule
(``failed_precondition``: no release with that version in the project) refuses most valid
requests: no schema can say which versions exist. This check takes back the rest of that
leniency: a 400 to valid data must be ``failed_precondition``, never ``invalid_argument`` (that
would mean the document accepts what the server calls malformed).
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.check
def valid_data_refused_only_by_business_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        code = json.loads(response.text).get("code")
    except ValueError:
        code = None
    if code != "failed_precondition":
        raise AssertionError(
            f"schema-valid data answered 400 {code!r}, not failed_precondition: {response.text}"
        )
    return None
