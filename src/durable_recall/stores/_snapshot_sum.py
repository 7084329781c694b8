"""A snapshot row's checksum: what makes a changed row's ranges, size or state read as damage.

A message body carries its own CRC, so a damaged body is named when read; a snapshot row's ranges
are plain JSON text, and rewriting them to another valid list of the same size (a reordered
history, two ranges swapped) reads as a whole, different snapshot. So every row stores a checksum
of its key and its contents (schema version 14), written with the row and verified on every read
(`decode_snapshot`) and so by `durable-recall check`; a mismatch is a `CorruptSnapshotError` naming
the snapshot.

The checksum is the first 16 hex digits of the MD5 of `idx|state|size|ranges|run_id` (the run id
last, so that no field's text can shift another's), computed the same way by Python and by
Postgres's `md5()` (the migration that gives an upgraded store's rows theirs); SQLite's migration
calls the Python function, registered on every connection as `dr_snapshot_checksum`. MD5 is no
defence against someone who can write the database and wants a change to go unnoticed (they can
rewrite the checksum too): it catches damage and mistaken edits, as the bodies' CRC does.
"""

from __future__ import annotations

import hashlib

__all__ = ('POSTGRES_SNAPSHOT_CHECKSUM', 'snapshot_checksum')


def snapshot_checksum(run_id: object, index: object, state: object, ranges: object, size: object) -> str:
    """The checksum of a snapshot row's key and contents (any stored types: a damaged row still gets one)."""
    text = f'{index}|{state}|{size}|{ranges}|{run_id}'
    return hashlib.md5(text.encode('utf-8', 'surrogatepass'), usedforsecurity=False).hexdigest()[:16]


POSTGRES_SNAPSHOT_CHECKSUM = (
    "left(md5(idx::text || '|' || state || '|' || size::text || '|' || ranges || '|' || run_id), 16)"
)
"""`snapshot_checksum` of a `{snapshots}` row, in Postgres SQL."""
