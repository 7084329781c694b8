"""How the index packs its per-position arrays and postings into bytes.

Fixed-width little-endian arrays: `array.frombytes` decodes them at C speed, which is what keeps a
cold search from paying a Python loop per posting. Postings interleave `(position, tf, length)`
triples of 16-bit values (with an escape for the rare larger one), positions increasing, so
appending a later catch-up's positions is a byte concatenation the database can do in place, and
a search scores a posting without reading anything else about its document.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = (
    'INDEX_VERSION',
    'ROLE_CODES',
    'ROLE_NAMES',
    'decode_floats',
    'decode_ints',
    'decode_postings',
    'decode_roles',
    'encode_floats',
    'encode_ints',
    'encode_postings',
    'encode_roles',
)

INDEX_VERSION = 1
"""What is indexed (tokenizer, index text, hash). A release that changes it bumps this and ships a
schema migration that empties the index tables and marks every run pending, so the next searches
rebuild the index by catching up."""

ROLE_NAMES: tuple[str, ...] = ('user', 'assistant', 'tool', 'system')
"""Role by code."""

ROLE_CODES: dict[str, int] = {name: code for code, name in enumerate(ROLE_NAMES)}
"""Code by role."""

_SWAP = sys.byteorder != 'little'


def _pack(packed: array[Any]) -> bytes:
    if _SWAP:
        packed.byteswap()
    return packed.tobytes()


def _unpack(packed: array[Any], data: bytes) -> array[Any]:
    packed.frombytes(data)
    if _SWAP:
        packed.byteswap()
    return packed


def encode_ints(values: Iterable[int]) -> bytes:
    """Unsigned 32-bit little-endian ints."""
    return _pack(array('I', values))


def decode_ints(data: bytes) -> array[int]:
    """The ints `encode_ints` packed."""
    return _unpack(array('I'), data)


_ESCAPE = 0xFFFF
_SMALL = struct.Struct('<HHH')


def encode_postings(postings: Sequence[tuple[int, int, int]]) -> bytes:
    """`(position, tf, document length)` triples, positions increasing, as 16-bit values.

    Almost every value fits 16 bits, so a posting takes 6 bytes. A value that does not (a position
    or length of 65,535 or more) is written as the escape `0xFFFF` and two 16-bit halves. Blobs
    concatenate: appending a later catch-up's postings is a byte concatenation.
    """
    if len(postings) == 1 and max(postings[0]) < _ESCAPE:
        return _SMALL.pack(*postings[0])
    values = array('H')
    for posting in postings:
        for value in posting:
            if value < _ESCAPE:
                values.append(value)
            else:
                values.extend((_ESCAPE, value & 0xFFFF, value >> 16))
    return _pack(values)


def decode_postings(data: bytes) -> tuple[Sequence[int], Sequence[int], Sequence[int]]:
    """Positions, term frequencies and document lengths, as three aligned sequences."""
    flat = _unpack(array('H'), data)
    if _ESCAPE not in flat:  # the common case, at C speed
        return flat[0::3], flat[1::3], flat[2::3]
    values: list[int] = []
    index, size = 0, len(flat)
    while index < size:
        value = flat[index]
        if value == _ESCAPE:
            values.append(flat[index + 1] | flat[index + 2] << 16)
            index += 3
        else:
            values.append(value)
            index += 1
    return values[0::3], values[1::3], values[2::3]


def encode_floats(values: Iterable[float]) -> bytes:
    """64-bit little-endian floats."""
    return _pack(array('d', values))


def decode_floats(data: bytes) -> array[float]:
    """The floats `encode_floats` packed."""
    return _unpack(array('d'), data)


def encode_roles(roles: Iterable[str]) -> bytes:
    """One byte per role."""
    return bytes(ROLE_CODES[role] for role in roles)


def decode_roles(data: bytes) -> list[str]:
    """The roles `encode_roles` packed."""
    return [ROLE_NAMES[code] for code in data]
