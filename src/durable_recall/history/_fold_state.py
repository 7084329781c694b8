"""The resumable state of a record fold, small enough for the search index to store per run.

A run's record is rebuilt by folding its snapshots in order; the next fold reads only the last
snapshot and the record positions that snapshot names. Keeping just that (a few kilobytes whatever
the run's length) lets the persistent index go on folding in another process without re-reading
the run's earlier snapshots.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ('FoldState',)


@dataclass(frozen=True)
class FoldState:
    """What a `RecordBuilder` needs to go on folding, without the record itself.

    Attributes:
        size: The record's length.
        marker: The dropped count of the last folded snapshot's compaction marker (0 for none).
        previous: The last folded snapshot's messages (artifacts removed) as
            `(hash, body position, log number, record position or None)`.
        record: The record's hash at each position `previous` names, where it differs from the
            hash of the `previous` entry naming it (an edit kept the original).
    """

    size: int
    marker: int
    previous: tuple[tuple[str, int, int, int | None], ...]
    record: Mapping[int, str]

    def to_json(self) -> str:
        """Compact JSON text, for the index to store."""
        return json.dumps(
            {
                'size': self.size,
                'marker': self.marker,
                'previous': [list(entry) for entry in self.previous],
                'record': [[position, digest] for position, digest in sorted(self.record.items())],
            },
            separators=(',', ':'),
        )

    @classmethod
    def from_json(cls, text: str) -> FoldState:
        """Read `to_json` text back.

        Raises:
            ValueError: The text is not a state this version wrote.
        """
        try:
            data = json.loads(text)
            return cls(
                size=int(data['size']),
                marker=int(data['marker']),
                previous=tuple(
                    (str(digest), int(body), int(seq), None if record is None else int(record))
                    for digest, body, seq, record in data['previous']
                ),
                record={int(position): str(digest) for position, digest in data['record']},
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f'not a record builder state: {error}') from error

    def needed(self) -> tuple[list[int], list[int]]:
        """The log numbers of `previous`, and the record positions whose message must be loaded to resume."""
        return [seq for _, _, seq, _ in self.previous], sorted(self.record)
