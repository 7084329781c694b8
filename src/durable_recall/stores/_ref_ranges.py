"""Version 5's conversion of per-message reference rows into ranges, shared by both dialects."""

from __future__ import annotations

from typing import LiteralString

__all__ = ('REF_RANGES',)

REF_RANGES: LiteralString = (
    'INSERT INTO {message_refs} (run_id, seq, count, ref_run_id, ref_seq)'
    ' SELECT run_id, MIN(seq), COUNT(*), ref_run_id, MIN(ref_seq) FROM ('
    ' SELECT run_id, seq, ref_run_id, ref_seq, seq - ref_seq AS shift,'
    ' seq - ROW_NUMBER() OVER (PARTITION BY run_id, ref_run_id, seq - ref_seq ORDER BY seq) AS island'
    ' FROM {messages} WHERE ref_run_id IS NOT NULL'
    ') AS refs GROUP BY run_id, ref_run_id, shift, island'
)
"""Version 5: version 3's reference rows as ranges, in both dialects.

Rows of one run naming one run at one shift (`seq - ref_seq`) whose numbers are consecutive share
an island (`seq` minus its rank): each island is a range.
"""
