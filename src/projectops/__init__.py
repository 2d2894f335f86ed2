"""projectops: the protobuf-first schema of the Project-Scoped Operations API (docs/contract.md):
the registry, the JSON codec, validation, the error model and the HTTP conventions.

    >>> import projectops
    >>> op = projectops.operation("get-release-details")
    >>> op.path
    '/api/mcp/get_release_details'
    >>> request = projectops.from_json('{"version": "1.0.0"}', op.request_type)
    >>> projectops.validate(request)
    >>> projectops.to_json(request)
    '{"version":"1.0.0"}'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes, modules_by_name

if TYPE_CHECKING:
    from projectops import errors as errors
    from projectops.codec import from_json as from_json
    from projectops.codec import to_dict as to_dict
    from projectops.codec import to_json as to_json
    from projectops.conventions import API_KEY_ENV as API_KEY_ENV
    from projectops.conventions import API_KEY_HEADER as API_KEY_HEADER
    from projectops.conventions import BASE_URL_ENV as BASE_URL_ENV
    from projectops.conventions import DEFAULT_BASE_URL as DEFAULT_BASE_URL
    from projectops.conventions import InvalidBaseUrl as InvalidBaseUrl
    from projectops.conventions import normalize_base_url as normalize_base_url
    from projectops.conventions import operation_name as operation_name
    from projectops.conventions import operation_path as operation_path
    from projectops.conventions import tool_name as tool_name
    from projectops.descriptions import description as description
    from projectops.errors import *  # noqa: F403  (the error model: errors.__all__)
    from projectops.registry import Operation as Operation
    from projectops.registry import UnknownOperationError as UnknownOperationError
    from projectops.registry import operation as operation
    from projectops.registry import operations as operations
    from projectops.validation import validate as validate

__version__ = "0.1.0"

# Each public name is imported from its module on first use (PEP 562): `import projectops`
# loads neither protobuf's runtime nor the codec, and the CLI's call pays only for what it uses.
_NAMES = {
    "projectops.codec": "from_json to_dict to_json",
    "projectops.conventions": "API_KEY_ENV API_KEY_HEADER BASE_URL_ENV DEFAULT_BASE_URL "
    "InvalidBaseUrl normalize_base_url operation_name operation_path tool_name",
    "projectops.descriptions": "description",
    # errors.__all__, the error model (tests/test_lazy_imports.py holds the two equal).
    "projectops.errors": "ERROR_CLASSES HTTP_STATUS_BY_CODE Aborted AlreadyExists ApiError "
    "Canceled Code DataLoss DeadlineExceeded FailedPrecondition FieldViolation Internal "
    "InvalidArgument NotFound OutOfRange PermissionDenied ResourceExhausted Unauthenticated "
    "Unavailable Unimplemented Unknown",
    "projectops.registry": "Operation UnknownOperationError operation operations",
    "projectops.validation": "validate",
}
_WHERE = modules_by_name(_NAMES)
__all__ = sorted(_WHERE)

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE)
