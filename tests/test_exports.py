"""The public surface, pinned: a change here is an API change and should be one on purpose."""

from __future__ import annotations

import durable_recall


def test_all_is_pinned() -> None:
    assert sorted(durable_recall.__all__) == [
        'ConversationSearch',
        'CorruptRunError',
        'CorruptSnapshotError',
        'DurableRecallDeprecationWarning',
        'DurableRecallError',
        'HistorySource',
        'InMemoryStepStore',
        'PersistBatch',
        'PostgresStepStore',
        'RunHistory',
        'RunIdConflictError',
        'RunRecord',
        'RunRegistration',
        'SearchScope',
        'Segment',
        'SlidingWindowCompaction',
        'Snapshot',
        'SnapshotChainError',
        'SnapshotDelta',
        'SnapshotHistorySource',
        'SnapshotState',
        'SqliteStepStore',
        'StepPersistence',
        'StepStore',
        'StoreConfigurationError',
        'StoreUnavailableError',
        'WorkflowCodeIOError',
        'open_store',
        'update_index',
    ]


def test_every_name_resolves() -> None:
    for name in durable_recall.__all__:
        assert getattr(durable_recall, name) is not None


def test_importing_the_package_loads_no_driver() -> None:
    import subprocess
    import sys

    code = 'import sys, durable_recall; print(sorted(m for m in ("psycopg", "sqlite3") if m in sys.modules))'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == '[]'
