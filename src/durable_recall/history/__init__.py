"""History: the store -> history record step of the data path (what search reads)."""

from __future__ import annotations

# The protocol first: the search package imports it back while `_rebuild` loads the artifact checks.
from ._source import HistorySource, RunHistory  # isort: split

from ._hash import message_hash, message_hashes
from ._rebuild import FoldState, RecordBuilder, strip_artifacts
from ._snapshot_source import SnapshotHistorySource

__all__ = (
    'FoldState',
    'HistorySource',
    'RecordBuilder',
    'RunHistory',
    'SnapshotHistorySource',
    'message_hash',
    'message_hashes',
    'strip_artifacts',
)
