"""Deprecated: the former name of :mod:`projectops.error_cases`, the server adapter's error
responses; it holds the same names."""

from projectops.error_cases import *  # noqa: F403
