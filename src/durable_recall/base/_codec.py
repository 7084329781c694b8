"""Message serialization shared by the capability and every store.

One JSON object per message, produced by pydantic-ai's own `ModelMessagesTypeAdapter`, so what a
store holds is exactly what core would write to `all_messages_json()`.

The stores keep each body as bytes from [`encode_body`]: a tag
byte, the CRC-32 of the JSON text's UTF-8 (4 bytes, little-endian), then either raw DEFLATE (zlib,
level 6) primed with a preset dictionary of pydantic-ai's message keys, or, when that would not be
smaller, the UTF-8 itself. The checksum is verified on every read, so a body damaged on disk (a
flipped byte that still inflates, a truncated row) is reported, never read back as another
message. Bodies are short (about a kilobyte of JSON), so most of what zlib alone would spend on
learning the keys, the dictionary saves: a quarter less than plain zlib on agent histories.

Earlier releases wrote bodies without a checksum (tag `0x01`, or plain JSON text); those still read
back as they are.
"""

from __future__ import annotations

import json
import warnings
import zlib
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ._unrecognized import has_unrecognized, split_unknown

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError
    from pydantic_ai.messages import ModelMessage

__all__ = (
    'MessageDecodeError',
    'StoredBody',
    'decode_body',
    'dump_messages',
    'encode_body',
    'load_messages',
    'plain_messages',
    'warm_codec',
)


def _adapter() -> TypeAdapter[list[ModelMessage]]:
    """pydantic-ai's message adapter, imported on first use: reading a store's rows needs no pydantic-ai."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter


def warm_codec() -> None:
    """Load pydantic-ai's message adapter and build its validator and serializer (about 80 ms on first use).

    The layers that always work with messages (search, persistence, conversations) call this at
    import, so the cost joins the rest of a worker's startup instead of its first search or save.
    """
    _adapter().validate_json('[]')


class MessageDecodeError(ValueError):
    """A stored message body is not a valid pydantic-ai message."""


StoredBody = str | bytes
"""A message body as a store holds it: JSON text, or compressed bytes from `encode_body`."""

_DEFLATE_TAG = 0x01
"""First byte of a body compressed with `_DICTIONARY`, without a checksum (written by earlier releases)."""

_CHECKED_DEFLATE_TAG = 0x02
"""First byte of a body compressed with `_DICTIONARY`, after the CRC-32 of its JSON text."""

_CHECKED_TEXT_TAG = 0x03
"""First byte of a body stored as its UTF-8 JSON text, after its CRC-32 (too small to gain from DEFLATE)."""

_LEVEL = 6
"""zlib's default level: on agent histories level 9 saves under 0.5% more, level 1 costs 7%."""

# Compatibility data: every body compressed under tag 0x01 needs exactly these bytes to decode.
# Never edit it; a better dictionary gets a new tag. (A test pins its SHA-256.)
_DICTIONARY = (
    b'{"parts":[{"content":"","timestamp":"2026-01-01T00:00:00Z","dynamic_ref":null,"context_id":null,'
    b'"scope":"conversation","metadata":null,"part_kind":"system-prompt"}],"timestamp":"2026-01-01T00:00:00Z",'
    b'"instructions":null,"kind":"request","run_id":null,"conversation_id":null,"metadata":null,"state":"complete"}'
    b'{"parts":[{"content":"","timestamp":"2026-01-01T00:00:00Z","part_kind":"user-prompt"}],'
    b'"timestamp":"2026-01-01T00:00:00Z","instructions":null,"kind":"request","run_id":null,"conversation_id":null,'
    b'"metadata":null,"state":"complete"}'
    b'{"parts":[{"content":"","id":null,"signature":null,"provider_name":null,"provider_details":null,'
    b'"part_kind":"thinking"},{"content":"","id":null,"provider_name":null,"provider_details":null,'
    b'"citations":null,"part_kind":"text"}],"usage":{"input_tokens":0,"cache_write_tokens":0,'
    b'"cache_write_1h_tokens":0,"cache_read_tokens":0,"output_tokens":0,"output_reasoning_tokens":0,'
    b'"input_audio_tokens":0,"cache_audio_read_tokens":0,"output_audio_tokens":0,"audio_seconds":0.0,'
    b'"details":{},"cost":null},"model_name":"","model_id":null,"timestamp":"2026-01-01T00:00:00Z",'
    b'"kind":"response","provider_name":null,"provider_url":null,"canonical_system":null,"provider_details":null,'
    b'"provider_response_id":null,"finish_reason":null,"run_id":null,"conversation_id":null,"metadata":null,'
    b'"workspace_ref":null,"history_digest":null,"failed_attempts":null,"state":"complete"}'
    b'{"parts":[{"tool_name":"","args":{},"tool_call_id":"","tool_kind":null,"id":null,"provider_name":null,'
    b'"provider_details":null,"part_kind":"tool-call"}],"usage":{"input_tokens":0,"cache_write_tokens":0,'
    b'"cache_write_1h_tokens":0,"cache_read_tokens":0,"output_tokens":0,"output_reasoning_tokens":0,'
    b'"input_audio_tokens":0,"cache_audio_read_tokens":0,"output_audio_tokens":0,"audio_seconds":0.0,'
    b'"details":{},"cost":null},"model_name":"","model_id":null,"timestamp":"2026-01-01T00:00:00Z",'
    b'"kind":"response","provider_name":null,"provider_url":null,"canonical_system":null,"provider_details":null,'
    b'"provider_response_id":null,"finish_reason":null,"run_id":null,"conversation_id":null,"metadata":null,'
    b'"workspace_ref":null,"history_digest":null,"failed_attempts":null,"state":"complete"}'
    b'{"parts":[{"tool_name":"","content":"","tool_call_id":"","tool_kind":null,"metadata":null,'
    b'"timestamp":"2026-01-01T00:00:00Z","outcome":"success","retry":null,"part_kind":"tool-return"}],'
    b'"timestamp":"2026-01-01T00:00:00Z","instructions":null,"kind":"request","run_id":null,"conversation_id":null,'
    b'"metadata":null,"state":"complete"}'
)


def encode_body(body: str) -> StoredBody:
    """The body as a store keeps it: a tag, its checksum, and the smaller of DEFLATE and the text itself."""
    try:
        data = body.encode('utf-8')
    except UnicodeEncodeError:
        return body  # not from `dump_messages`; the database refuses it as it always did
    checksum = zlib.crc32(data).to_bytes(4, 'little')
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=_DICTIONARY)
    packed = packer.compress(data) + packer.flush()
    if len(packed) < len(data):
        return bytes((_CHECKED_DEFLATE_TAG,)) + checksum + packed
    return bytes((_CHECKED_TEXT_TAG,)) + checksum + data


def decode_body(stored: StoredBody) -> str:
    """The JSON text of a body written by `encode_body` (or stored by an earlier release).

    Raises:
        MessageDecodeError: Bytes that are not a body this release knows, or whose checksum
            does not match: the stored body is damaged.
    """
    if isinstance(stored, str):
        return stored
    if not isinstance(stored, bytes | bytearray | memoryview):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise MessageDecodeError(f'stored body is a {type(stored).__name__}, not text or bytes')
    tag = stored[0] if stored else None
    if tag == _DEFLATE_TAG:
        try:
            return _inflate(memoryview(stored)[1:]).decode('utf-8')
        except UnicodeDecodeError as error:
            raise MessageDecodeError(f'compressed body is not UTF-8 ({error})') from error
    if tag not in (_CHECKED_DEFLATE_TAG, _CHECKED_TEXT_TAG) or len(stored) < 5:
        raise MessageDecodeError(f'stored body has unknown format {stored[:1].hex() or "(empty)"}')
    expected = int.from_bytes(stored[1:5], 'little')
    view = memoryview(stored)[5:]
    data = _inflate(view) if tag == _CHECKED_DEFLATE_TAG else bytes(view)
    if zlib.crc32(data) != expected:
        raise MessageDecodeError('stored body fails its checksum: it was damaged after it was written')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as error:  # pragma: no cover - the checksum matched what was encoded
        raise MessageDecodeError(f'stored body is not UTF-8 ({error})') from error


def _inflate(packed: memoryview) -> bytes:
    unpacker = zlib.decompressobj(-zlib.MAX_WBITS, zdict=_DICTIONARY)
    try:
        data = unpacker.decompress(packed) + unpacker.flush()
    except zlib.error as error:
        raise MessageDecodeError(f'compressed body does not decompress ({error})') from error
    if not unpacker.eof:
        raise MessageDecodeError('compressed body is truncated')
    if unpacker.unused_data:
        raise MessageDecodeError('compressed body has trailing bytes')
    return data


def dump_messages(messages: Sequence[ModelMessage]) -> list[str]:
    """Serialize each message to its own compact JSON object text."""
    if not messages:
        return []
    return [_dump(item) for item in plain_messages(messages)]


def plain_messages(messages: Sequence[ModelMessage]) -> list[Any]:
    """The messages as JSON-ready data, exactly as core dumps them (held-verbatim parts as stored)."""
    if not messages:
        return []
    return _adapter().dump_python(list(messages), mode='json', warnings=not has_unrecognized(messages))


def _dump(item: Any) -> str:
    body = json.dumps(item, ensure_ascii=False, separators=(',', ':'))
    try:
        body.encode('utf-8')
    except UnicodeEncodeError:
        # A lone surrogate (from a tool that read broken bytes) has no UTF-8 form, so SQLite and
        # Postgres would refuse the text; JSON escapes keep it exact and storable.
        body = json.dumps(item, ensure_ascii=True, separators=(',', ':'))
    return body


def load_messages(bodies: Sequence[str]) -> list[ModelMessage]:
    """Parse message bodies written by [`dump_messages`].

    A part of a kind the installed pydantic-ai does not define (written by a later release) is
    held verbatim as an `UnrecognizedPart` (see `_unrecognized`), so a newer writer's run still
    reads, indexes and shows. A capability part (pydantic-ai 2.78) of a kind no module of this
    process registered loads as pydantic-ai's `UnknownCapabilityPart`, which renders and dumps
    exactly as the original. A store
    reader (the command line, a search worker) seldom imports the application's part kinds, so
    pydantic-ai's warning that a kind is unknown is expected here, and silenced.

    Raises:
        MessageDecodeError: A body is not JSON or not a message; the message says which.
    """
    if not bodies:
        return []
    from pydantic import ValidationError

    adapter = _adapter()
    text = '[' + ','.join(bodies) + ']'
    try:
        with _unregistered_kinds_quiet():
            return _one_each(bodies, adapter.validate_json(text))
    except ValidationError as error:
        if not _is_json_error(error):
            return _with_unrecognized_parts(bodies, json.loads(text), error)
        refused = error
    # pydantic-core's JSON parser refuses an escaped lone surrogate, which `dump_messages` writes
    # for text that has one, and does not always say so ('unexpected end of hex escape' for a high
    # surrogate before anything but another escape). The standard library's parser is the one that
    # wrote the text, so any text pydantic-core cannot parse gets a second parse from it; validation
    # gives the same messages. Text neither can parse is reported with pydantic-core's reason.
    try:
        parsed = json.loads(text)
    except ValueError:
        raise MessageDecodeError(_first_error(refused)) from refused
    try:
        with _unregistered_kinds_quiet():
            return _one_each(bodies, adapter.validate_python(parsed))
    except ValidationError as error:
        return _with_unrecognized_parts(bodies, parsed, error)


def _with_unrecognized_parts(bodies: Sequence[str], parsed: object, error: ValidationError) -> list[ModelMessage]:
    """The messages, each part of a kind this pydantic-ai does not define held verbatim (see `_unrecognized`).

    Raises:
        MessageDecodeError: The body has a fault other than unknown part kinds: `error`'s, as before.
    """
    from pydantic import ValidationError

    split = split_unknown(parsed)
    if split is None:
        raise MessageDecodeError(_first_error(error)) from error
    kept, removed = split
    try:
        with _unregistered_kinds_quiet():
            messages = _one_each(bodies, _adapter().validate_python(kept))
    except ValidationError:
        raise MessageDecodeError(_first_error(error)) from error
    for index, position, part in removed:
        cast(list[object], messages[index].parts).insert(position, part)
    return messages


@contextmanager
def _unregistered_kinds_quiet() -> Generator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='Unknown capability part kind', category=UserWarning)
        yield


def _one_each(bodies: Sequence[str], messages: list[ModelMessage]) -> list[ModelMessage]:
    """The messages, if each body held exactly one (the bodies are parsed as one JSON array).

    Raises:
        MessageDecodeError: A body held more or less than one message (a damaged row).
    """
    if len(messages) != len(bodies):
        raise MessageDecodeError(f'{len(bodies)} stored bodies hold {len(messages)} messages: one is not a message')
    return messages


def _is_json_error(error: ValidationError) -> bool:
    return any(item['type'] == 'json_invalid' for item in error.errors())


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = '.'.join(str(part) for part in first['loc'])
    return f'{first["msg"]} at {location}' if location else first['msg']
