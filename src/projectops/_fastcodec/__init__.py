"""A fast path for the protobuf JSON mapping, agreeing with ``json_format`` on what it accepts
(``tests/core/test_codec_differential.py``): per message type a *plan* with a generated decode
and encode function, where ``json_format`` walks every field by reflection 10-25 times slower
than ``json.loads``/``json.dumps``. Modules, each importing only later ones: ``_decode``,
``_encode``, ``_plans``, ``_timefmt``, ``_float32``.
"""

from __future__ import annotations

from projectops._fastcodec._decode import from_dict
from projectops._fastcodec._encode import iter_json, json_encoder, to_dict
from projectops._fastcodec._plans import Unsupported

__all__ = ["Unsupported", "from_dict", "iter_json", "json_encoder", "to_dict"]
