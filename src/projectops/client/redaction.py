"""Redaction of the API key from text this process prints or logs (a last line of defence).

No message of this package quotes the key, but a server's message or a library's could.
"""

from __future__ import annotations

import os

from projectops.conventions import API_KEY_ENV

__all__ = ["redact"]


def redact(text: str) -> str:
    """`text` with the value of ``SERVICE_API_KEY`` replaced by ``***``."""
    key = (os.environ.get(API_KEY_ENV) or "").strip()
    return text.replace(key, "***") if key else text
