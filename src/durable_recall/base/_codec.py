"""Message serialization shared by the capability and every store.

One JSON object per message, produced by pydantic-ai's own `ModelMessagesTypeAdapter`, so what a
store holds is exactly what core would write to `all_messages_json()`.

The SQL stores keep each body compressed when that is smaller ([`encode_body`][durable_recall._codec.encode_body]):
a tag byte, then raw DEFLATE (zlib, level 6) primed with a preset dictionary of pydantic-ai's message
keys. Bodies are short (about a kilobyte of JSON), so most of what zlib alone would spend on
learning the keys, the dictionary saves: a quarter less than plain zlib on agent histories. Text
bodies, written by earlier releases or too small to gain, are stored and read back as they are.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

__all__ = ('MessageDecodeError', 'StoredBody', 'decode_body', 'dump_messages', 'encode_body', 'load_messages')


# pydantic-ai's message adapter builds its validator and serializer on first use (about 80 ms).
# Build them at import, with the rest of the startup cost, not in a worker's first search or save.
ModelMessagesTypeAdapter.validate_json('[]')


class MessageDecodeError(ValueError):
    """A stored message body is not a valid pydantic-ai message."""


StoredBody = str | bytes
"""A message body as a store holds it: JSON text, or compressed bytes from `encode_body`."""

_DEFLATE_TAG = 0x01
"""First byte of a body compressed with `_DICTIONARY` (a later format would take another tag)."""

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
    """The smaller of `body` itself and its compressed bytes (a tag byte, then DEFLATE with the dictionary)."""
    try:
        data = body.encode('utf-8')
    except UnicodeEncodeError:
        return body  # not from `dump_messages`; the database refuses it as it always did
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=_DICTIONARY)
    packed = packer.compress(data) + packer.flush()
    if len(packed) + 1 < len(data):
        return bytes((_DEFLATE_TAG,)) + packed
    return body


def decode_body(stored: StoredBody) -> str:
    """The JSON text of a body written by `encode_body` (or stored as text by any release).

    Raises:
        MessageDecodeError: Bytes that are not a compressed body this release knows.
    """
    if isinstance(stored, str):
        return stored
    if not stored or stored[0] != _DEFLATE_TAG:
        raise MessageDecodeError(f'stored body has unknown format {stored[:1].hex() or "(empty)"}')
    unpacker = zlib.decompressobj(-zlib.MAX_WBITS, zdict=_DICTIONARY)
    try:
        data = unpacker.decompress(memoryview(stored)[1:]) + unpacker.flush()
        if not unpacker.eof:
            raise MessageDecodeError('compressed body is truncated')
        if unpacker.unused_data:
            raise MessageDecodeError('compressed body has trailing bytes')
        return data.decode('utf-8')
    except (zlib.error, UnicodeDecodeError) as error:
        raise MessageDecodeError(f'compressed body does not decompress ({error})') from error


def dump_messages(messages: Sequence[ModelMessage]) -> list[str]:
    """Serialize each message to its own compact JSON object text."""
    if not messages:
        return []
    plain: list[Any] = ModelMessagesTypeAdapter.dump_python(list(messages), mode='json')
    return [_dump(item) for item in plain]


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
    """Parse message bodies written by [`dump_messages`][durable_recall._codec.dump_messages].

    Raises:
        MessageDecodeError: A body is not JSON or not a message; the message says which.
    """
    if not bodies:
        return []
    text = '[' + ','.join(bodies) + ']'
    try:
        return ModelMessagesTypeAdapter.validate_json(text)
    except ValidationError as error:
        if not _is_surrogate_error(error):
            raise MessageDecodeError(_first_error(error)) from error
    # pydantic-core's JSON parser refuses an escaped lone surrogate, which `dump_messages` writes
    # for text that has one; the standard library parses it, and validation gives the same result.
    try:
        return ModelMessagesTypeAdapter.validate_python(json.loads(text))
    except (ValueError, ValidationError) as error:
        raise MessageDecodeError(str(error)) from error


def _is_surrogate_error(error: ValidationError) -> bool:
    return any(item['type'] == 'json_invalid' and 'surrogate' in item['msg'] for item in error.errors())


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = '.'.join(str(part) for part in first['loc'])
    return f'{first["msg"]} at {location}' if location else first['msg']
