"""History layer: message hashes and the exact record rebuild (snapshots -> one run's record).

`HistorySource` is the seam search reads records through; the store-backed one,
`SnapshotHistorySource`, lives with search, above the stores.
"""

from __future__ import annotations

from ._fold_state import FoldState
from ._hash import message_hash, message_hashes
from ._rebuild import Cleaned, RecordBuilder
from ._source import HistorySource, RunHistory
from ._strip import CORE_SUMMARY_KEY, record_view, strip_artifacts, summary_view

__all__ = (
    'CORE_SUMMARY_KEY',
    'Cleaned',
    'FoldState',
    'HistorySource',
    'RecordBuilder',
    'RunHistory',
    'message_hash',
    'message_hashes',
    'record_view',
    'strip_artifacts',
    'summary_view',
)
