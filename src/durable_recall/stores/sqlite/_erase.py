"""The SQLite store's erasure: deleting a run or an idle conversation, and scrubbing the file afterwards.

Deleting rows is not erasing them: SQLite leaves a deleted row's bytes in its page until the page
is reused, and the write-ahead log keeps every page image it was handed until a checkpoint resets
it. So every connection runs with `PRAGMA secure_delete = FAST` (a deleted cell is zeroed in its
page, at no extra I/O; `SqliteConnection`), an erasure runs with `secure_delete = ON` (freed
overflow pages are zeroed too), a file in incremental auto-vacuum mode (every file durable-recall
creates) cuts its free pages off at each commit, and `scrub` checkpoints the log with `TRUNCATE`,
which empties the `-wal` file. A file created without auto-vacuum (an older release, by hand) keeps
free pages, which `scrub` clears with `VACUUM`.

A run of the same conversation may hold references to the deleted run's log entries (a run's
first snapshot inherits its base's messages by reference, `_log_refs`): those stretches become
copies of the bodies before the deleted run's rows go, so the run keeps reading its messages.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TypeVar

from ...base import CorruptSnapshotError
from .._erasure import ScrubReport
from ._connection import transaction
from ._index import forget_conversation
from ._index_writer import SCOPE_KEY, bump_generation
from ._reads import logs
from ._vectors import forget_vectors

__all__ = (
    'delete_conversation',
    'delete_idle_conversation',
    'delete_run',
    'idle_conversations',
    'scrub',
    'secure_delete',
)

_T = TypeVar('_T')

_LAST_ACTIVITY = (
    'SELECT MAX(max(r.started_at, COALESCE((SELECT MAX(s.saved_at) FROM dr_snapshots AS s'
    ' WHERE s.run_id = r.run_id), r.started_at))) FROM dr_runs AS r WHERE r.conversation_id = ?'
)
"""A conversation's last activity, in microseconds: its last run's start or last snapshot's save."""


@contextmanager
def secure_delete(conn: sqlite3.Connection) -> Generator[None]:
    """Zero every byte the block deletes, freed overflow pages included (`secure_delete = ON`), then back to FAST."""
    conn.execute('PRAGMA secure_delete = ON')
    try:
        yield
    finally:
        conn.execute('PRAGMA secure_delete = FAST')


def _erasing(conn: sqlite3.Connection, write: Callable[[sqlite3.Connection], _T]) -> _T:
    with secure_delete(conn), transaction(conn, 'BEGIN IMMEDIATE'):
        return write(conn)


def delete_conversation(conn: sqlite3.Connection, conversation_id: str) -> int:
    """Delete a conversation's runs with everything they hold, zeroing the deleted bytes; the run count."""
    return _erasing(conn, lambda conn: _delete_conversation(conn, conversation_id))


def _delete_conversation(conn: sqlite3.Connection, conversation_id: str) -> int:
    # References never leave a conversation (`_log_refs`): no other run needs these bodies.
    numbers = 'SELECT run_no FROM dr_runs WHERE conversation_id = ?'
    forget_conversation(conn, conversation_id)
    forget_vectors(conn, conversation_id)
    # The journal codecs' keys: the engines' copies of the conversation become unreadable.
    conn.execute('DELETE FROM dr_conversation_keys WHERE conversation_id = ?', (conversation_id,))
    conn.execute(f'DELETE FROM dr_messages WHERE run_no IN ({numbers})', (conversation_id,))
    conn.execute(f'DELETE FROM dr_message_refs WHERE run_no IN ({numbers})', (conversation_id,))
    conn.execute(
        'DELETE FROM dr_snapshots WHERE run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
        (conversation_id,),
    )
    return conn.execute('DELETE FROM dr_runs WHERE conversation_id = ?', (conversation_id,)).rowcount


def idle_conversations(conn: sqlite3.Connection, before: int) -> list[tuple[str, int]]:
    """Conversations whose last activity (microseconds) is before `before`, with it, oldest first."""
    rows = conn.execute(
        'SELECT conversation_id, MAX(max(r.started_at, COALESCE((SELECT MAX(s.saved_at) FROM dr_snapshots AS s'
        ' WHERE s.run_id = r.run_id), r.started_at))) AS last FROM dr_runs AS r'
        " WHERE typeof(conversation_id) = 'text' GROUP BY conversation_id HAVING last < ?"
        ' ORDER BY last, conversation_id',
        (before,),
    )
    return [(conversation_id, last) for conversation_id, last in rows]


def delete_idle_conversation(conn: sqlite3.Connection, conversation_id: str, before: int) -> int | None:
    """Delete the conversation if its last activity is still before `before`; `None` if it has become active.

    The check and the delete are one write transaction, so a run or snapshot saved after the
    conversation was listed as idle keeps it.
    """

    def write(conn: sqlite3.Connection) -> int | None:
        (last,) = conn.execute(_LAST_ACTIVITY, (conversation_id,)).fetchone()
        if last is None:
            return 0
        if last >= before:
            return None
        return _delete_conversation(conn, conversation_id)

    return _erasing(conn, write)


def delete_run(conn: sqlite3.Connection, run_id: str) -> bool:
    """Delete one run with its snapshots, log, vectors and pending mark; whether it was stored.

    Runs referring to its entries get copies of the bodies first, and its conversation's index is
    emptied and every remaining run marked pending, so that the next catch-up indexes the
    conversation as if the run had never been saved (its statistics included).

    Raises:
        CorruptSnapshotError: A run referring to the deleted run's entries has an entry whose body
            is already gone (nothing is deleted: copying it is impossible, and deleting would hide it).
    """

    def write(conn: sqlite3.Connection) -> bool:
        found = conn.execute('SELECT run_no, conversation_id FROM dr_runs WHERE run_id = ?', (run_id,)).fetchone()
        stray = conn.execute('DELETE FROM dr_snapshots WHERE run_id = ?', (run_id,)).rowcount
        conn.execute('DELETE FROM dr_vectors WHERE run_id = ?', (run_id,))
        conn.execute('DELETE FROM dr_pending WHERE run_id = ?', (run_id,))
        if found is None:
            return stray > 0
        run_no, conversation_id = found
        _own_inherited(conn, run_no)
        conn.execute('DELETE FROM dr_messages WHERE run_no = ?', (run_no,))
        conn.execute('DELETE FROM dr_message_refs WHERE run_no = ?', (run_no,))
        conn.execute('DELETE FROM dr_runs WHERE run_no = ?', (run_no,))
        _reindex_scope(conn, conversation_id)
        return True

    return _erasing(conn, write)


def _own_inherited(conn: sqlite3.Connection, run_no: int) -> None:
    """Turn every other run's references to run `run_no`'s entries into copies of their bodies."""
    refs = conn.execute(
        'SELECT f.run_no, r.run_id, f.seq, f.count FROM dr_message_refs AS f JOIN dr_runs AS r ON r.run_no = f.run_no'
        ' WHERE f.ref_run_no = ? AND f.run_no <> ?',
        (run_no, run_no),
    ).fetchall()
    for holder_no, holder, seq, count in refs:
        bodies = logs(conn, [(holder, seq, seq + count)]).get(holder, {})
        missing = [at for at in range(seq, seq + count) if bodies.get(at) is None]
        if missing:
            raise CorruptSnapshotError(
                holder, -1, f'log entries {missing} are referenced but their bodies are gone, so they cannot be copied'
            )
        conn.execute('DELETE FROM dr_message_refs WHERE run_no = ? AND seq = ?', (holder_no, seq))
        conn.executemany(
            'INSERT INTO dr_messages (run_no, seq, body) VALUES (?, ?, ?)',
            [(holder_no, at, bodies[at]) for at in range(seq, seq + count)],
        )


def _reindex_scope(conn: sqlite3.Connection, conversation_id: str | None) -> None:
    """Empty the conversation's index and mark its remaining runs pending: the next catch-up rebuilds it."""
    found = conn.execute(f'SELECT {SCOPE_KEY}', (conversation_id, conversation_id)).fetchone()
    if found is not None and found[0] is not None:
        for table in ('dr_index_postings', 'dr_index_hashes', 'dr_index_runs', 'dr_index_scopes'):
            conn.execute(f'DELETE FROM {table} WHERE scope_key = ?', (found[0],))
    conn.execute(
        'INSERT INTO dr_pending (conversation_id, run_id, upto)'
        " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
        ' FROM dr_runs AS r JOIN dr_snapshots AS s ON s.run_id = r.run_id WHERE r.conversation_id IS ?'
        ' GROUP BY r.run_id ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = max(upto, excluded.upto)',
        (conversation_id,),
    )
    bump_generation(conn)


def scrub(conn: sqlite3.Connection) -> ScrubReport:
    """Leave no deleted byte in the file or its write-ahead log (see the module docstring).

    Call with no transaction open. The checkpoint waits (up to the store's busy timeout) for
    readers and writers of other connections; one still reading an older snapshot keeps the log
    from being emptied, which the report says.
    """
    steps: list[str] = []
    if conn.execute('PRAGMA freelist_count').fetchone()[0]:
        conn.execute('VACUUM')  # a file without auto-vacuum keeps free pages, deleted bytes and all
        steps.append('vacuumed the free pages')
    busy, frames, copied = conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()
    if busy:
        return ScrubReport(
            complete=False,
            detail=(
                f'another connection kept the write-ahead log busy ({copied} of {frames} frames copied): deleted '
                'bytes may remain in the -wal file until a later checkpoint; run the command again when it is idle'
            ),
        )
    steps.append('checkpointed and emptied the write-ahead log')
    return ScrubReport(complete=True, detail='; '.join(steps))
