"""A fast path for the protobuf JSON mapping, agreeing with ``json_format`` on what it accepts.

``json_format`` walks every field through reflection (10-25 times slower than ``json.loads``/
``json.dumps``); here each message type gets a *plan*, built once from its descriptor, with two
Python functions generated for the type (decode and encode), each field a few inlined lines.
:func:`to_dict` returns what ``json_format.MessageToDict`` returns with the codec's options (keys
in proto order); :func:`from_dict` what ``json_format.ParseDict`` builds, or raises
:class:`Unsupported` for every error and the few forms it does not model (Struct, Value, Any and
the wrappers go to ``json_format`` for their subtree). Modules, each importing only later ones:
``_decode``, ``_encode``, ``_plans``, ``_timefmt``, ``_float32``.
``tests/core/test_codec_differential.py`` holds both directions to ``json_format``.
"""

from __future__ import annotations

from projectops._fastcodec._decode import from_dict
from projectops._fastcodec._encode import iter_json, to_dict
from projectops._fastcodec._plans import Unsupported

__all__ = ["Unsupported", "from_dict", "iter_json", "to_dict"]
