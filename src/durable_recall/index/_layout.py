"""How the index packs a run's per-position arrays into bytes (postings: see `_chunks`).

Each array is a header (a flags byte, then the count as unsigned LEB128) and the values in the
narrowest fixed width that holds them, little-endian, byte-shuffled (every value's first byte,
then every value's second byte, ...) and raw-DEFLATEd when that is smaller. A chat app's store
holds a row per run of a few dozen positions, where the high bytes of lengths and log numbers are
zeros and those of times repeat: shuffled and deflated, the four arrays take about a sixth of their
fixed-width bytes. Decoding stays at C speed (`zlib`, slice assignment, `array.frombytes`), which is
what keeps a cold search from paying a Python loop per position.

The format is compatibility data of the index (see `INDEX_VERSION`).
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections.abc import Iterable
from typing import Any

from ..text import ROLES, Role

__all__ = (
    'INDEX_VERSION',
    'ROLE_CODES',
    'ROLE_NAMES',
    'array_length',
    'decode_floats',
    'decode_ints',
    'encode_floats',
    'encode_ints',
)

INDEX_VERSION = 6
"""What is indexed and how it is packed (tokenizer and analyzer, index text, hash, record, postings
layout); 6 since open tails of postings hold varint records (schema version 11), 5 since the record
keeps compaction summaries once, with the role `summary` (schema version 8). A release that
changes it bumps this and ships a schema migration that empties the index tables and marks every
run pending, so the next searches rebuild the index by catching up."""

ROLE_NAMES: tuple[Role, ...] = ROLES
"""Role by code (compatibility data: stored role bytes are indexes into it)."""

ROLE_CODES: dict[Role, int] = {name: code for code, name in enumerate(ROLE_NAMES)}
"""Code by role."""

_SWAP = sys.byteorder != 'little'

_DEFLATED = 0x10
"""Flag: the shuffled bytes are raw DEFLATE."""

_FLOAT = 0x20
"""Flag: 64-bit floats (otherwise unsigned ints of the width in the low bits)."""

_WIDTHS = {1: 'B', 2: 'H', 4: 'I', 8: 'd'}
"""Array type by width in bytes."""

_LEVEL = 6


def encode_ints(values: Iterable[int]) -> bytes:
    """Unsigned ints below 2**32, in the narrowest width that holds them all."""
    packed = array('I', values)
    top = max(packed, default=0)
    width = 1 if top < 0x100 else 2 if top < 0x10000 else 4
    return _encode(packed if width == 4 else array(_WIDTHS[width], packed), width, 0)


def decode_ints(data: bytes) -> array[int]:
    """The ints `encode_ints` packed (an array of their width: index and sum it like a list).

    Raises:
        ValueError: The bytes are not an array this version packed.
    """
    return _decode(data, floats=False)


def encode_floats(values: Iterable[float]) -> bytes:
    """64-bit floats."""
    return _encode(array('d', values), 8, _FLOAT)


def decode_floats(data: bytes) -> array[float]:
    """The floats `encode_floats` packed.

    Raises:
        ValueError: The bytes are not an array this version packed.
    """
    return _decode(data, floats=True)


def array_length(data: bytes) -> int:
    """How many values a packed array holds, from its header alone.

    Raises:
        ValueError: The bytes are not an array this version packed.
    """
    if not data:
        return 0
    return _header(data)[1]


def _encode(values: array[Any], width: int, kind: int) -> bytes:
    if not values:
        return b''
    if _SWAP:
        values.byteswap()
    raw = values.tobytes()
    count = len(values)
    shuffled = bytearray(len(raw))
    for byte in range(width):
        shuffled[byte * count : (byte + 1) * count] = raw[byte::width]
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = packer.compress(shuffled) + packer.flush()
    flags = kind | width.bit_length() - 1
    payload: bytes | bytearray = shuffled
    if len(deflated) < len(shuffled):
        flags |= _DEFLATED
        payload = deflated
    header = bytearray([flags])
    while count >= 0x80:
        header.append((count & 0x7F) | 0x80)
        count >>= 7
    header.append(count)
    return bytes(header) + payload


def _header(data: bytes) -> tuple[int, int, int]:
    """(flags, count, offset of the payload)."""
    flags, count, shift, offset = data[0], 0, 0, 1
    while True:
        if offset >= len(data) or shift > 35:
            raise ValueError('packed array header is truncated')
        byte = data[offset]
        offset += 1
        count |= (byte & 0x7F) << shift
        if byte < 0x80:
            return flags, count, offset
        shift += 7


def _decode(data: bytes, *, floats: bool) -> array[Any]:
    if not data:
        return array('d' if floats else 'B')
    flags, count, offset = _header(data)
    width = 1 << (flags & 0x03)
    if bool(flags & _FLOAT) != floats or flags & ~(_DEFLATED | _FLOAT | 0x03) or (floats and width != 8):
        raise ValueError(f'packed array has unexpected flags {flags:#04x}')
    payload = data[offset:]
    if flags & _DEFLATED:
        try:
            unpacker = zlib.decompressobj(-zlib.MAX_WBITS)
            payload = unpacker.decompress(payload, count * width + 1)
        except zlib.error as error:
            raise ValueError(f'packed array does not inflate ({error})') from error
    if len(payload) != count * width:
        raise ValueError(f'packed array holds {len(payload)} bytes for {count} values of {width}')
    raw = bytearray(len(payload))
    for byte in range(width):
        raw[byte::width] = payload[byte * count : (byte + 1) * count]
    values: array[Any] = array(_WIDTHS[width])
    values.frombytes(raw)
    if _SWAP:
        values.byteswap()
    return values
