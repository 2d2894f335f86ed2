"""A fast path for the protobuf JSON mapping, agreeing with ``json_format`` on what it accepts.

The codec (``projectops.codec``) owns the mapping options; this package makes them cheap.
``json_format`` walks every field in Python through reflection, which makes it 10-25 times
slower than ``json.loads``/``json.dumps``. Here each message type gets a *plan*, built once from
its descriptor and cached: two small Python functions generated for that type (one to decode,
one to encode), in which every field is a few inlined lines chosen by its type.

- :func:`to_dict` returns exactly what ``json_format.MessageToDict`` returns with the codec's
  options, keys in proto field order at every level, or runs ``json_format`` for what it does
  not model; :func:`iter_json` writes the same object as JSON text, a piece at a time.
- :func:`from_dict` returns the message ``json_format.ParseDict(data, message_type(),
  ignore_unknown_fields=not strict)`` builds (in strict mode it also refuses enum values that
  are not names), or raises :class:`Unsupported` for every error and the few valid forms it
  does not model, and the caller runs ``json_format``.

The mapping is the protobuf JSON mapping (ProtoJSON, https://protobuf.dev/programming-guides/json/)
as the installed ``json_format`` implements it, quirks included: lowerCamelCase or proto field
names, 64-bit integers as strings or numbers, integral floats for integers, ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` for floating point, standard and URL-safe base64 for bytes,
enum names (and numbers, in lenient mode), unknown enum names dropped in lenient mode, ``null``
as "not set", RFC 3339 timestamps with any offset, ``"<seconds>s"`` durations. Well-known types
other than Timestamp and Duration (Struct, Value, ListValue, the wrappers, FieldMask, Empty,
Any) are handed to ``json_format`` for their subtree only.

One job per module, each importing only those listed after it:

- ``_decode``: :func:`from_dict`, the decoder generated per type and the value checks it calls;
- ``_encode``: :func:`to_dict`, :func:`iter_json`, the encoder generated per type;
- ``_plans``: plans (fields, kinds, shapes, accepted keys) from descriptors, the cache and lock,
  :class:`Unsupported`;
- ``_timefmt``: Timestamp and Duration text, read and written;
- ``_float32``: the shortest text of a 32-bit float, as json_format writes it.

A package rather than sibling modules of the codec: the parts are private to the fast path, and
``projectops.codec`` (and the benchmark and tests) keep importing ``projectops._fastcodec`` and
the four names below. This ``__init__`` only re-exports them.

``tests/core/test_codec_differential.py`` holds both directions to ``json_format`` on generated
messages and on inputs of every shape, valid or not.
"""

from __future__ import annotations

from projectops._fastcodec._decode import from_dict
from projectops._fastcodec._encode import iter_json, to_dict
from projectops._fastcodec._plans import Unsupported

__all__ = ["Unsupported", "from_dict", "iter_json", "to_dict"]
