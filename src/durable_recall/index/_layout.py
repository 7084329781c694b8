"""How the index packs a run's per-position arrays into bytes (postings: see `_chunks`).

Fixed-width little-endian arrays: `array.frombytes` decodes them at C speed, which is what keeps a
cold search from paying a Python loop per position.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from typing import Any

from ..text import ROLES, Role

__all__ = (
    'INDEX_VERSION',
    'ROLE_CODES',
    'ROLE_NAMES',
    'decode_floats',
    'decode_ints',
    'encode_floats',
    'encode_ints',
    'encode_roles',
)

INDEX_VERSION = 2
"""What is indexed (tokenizer, index text, hash). A release that changes it bumps this and ships a
schema migration that empties the index tables and marks every run pending, so the next searches
rebuild the index by catching up."""

ROLE_NAMES: tuple[Role, ...] = ROLES
"""Role by code (compatibility data: stored role bytes are indexes into it)."""

ROLE_CODES: dict[Role, int] = {name: code for code, name in enumerate(ROLE_NAMES)}
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


def encode_floats(values: Iterable[float]) -> bytes:
    """64-bit little-endian floats."""
    return _pack(array('d', values))


def decode_floats(data: bytes) -> array[float]:
    """The floats `encode_floats` packed."""
    return _unpack(array('d'), data)


def encode_roles(roles: Iterable[Role]) -> bytes:
    """One byte per role."""
    return bytes(ROLE_CODES[role] for role in roles)
