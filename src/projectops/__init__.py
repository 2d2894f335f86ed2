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

from projectops import errors
from projectops.codec import from_json, to_dict, to_json
from projectops.conventions import (
    API_KEY_ENV,
    API_KEY_HEADER,
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    InvalidBaseUrl,
    normalize_base_url,
    operation_name,
    operation_path,
    tool_name,
)
from projectops.descriptions import description
from projectops.errors import *  # noqa: F403  (the error model: errors.__all__)
from projectops.registry import Operation, UnknownOperationError, operation, operations
from projectops.validation import validate

__version__ = "0.1.0"

__all__ = [
    "API_KEY_ENV",
    "API_KEY_HEADER",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "InvalidBaseUrl",
    "Operation",
    "UnknownOperationError",
    "description",
    "from_json",
    "normalize_base_url",
    "operation",
    "operation_name",
    "operation_path",
    "operations",
    "to_dict",
    "to_json",
    "tool_name",
    "validate",
]
__all__ += errors.__all__
