"""Messages, registrations and a reference delta encoder for the store suite."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from durable_recall.base._codec import dump_messages
from durable_recall.base._records import RunRegistration, Segment, SnapshotDelta, SnapshotState
from durable_recall.stores import StepStore

BASE = datetime(2025, 1, 1, tzinfo=UTC)


def message(n: int) -> ModelMessage:
    """A small distinct message: requests for even `n`, responses for odd."""
    at = BASE + timedelta(seconds=n)
    if n % 2 == 0:
        return ModelRequest(parts=[UserPromptPart(content=f'question {n}', timestamp=at)], timestamp=at)
    return ModelResponse(parts=[TextPart(content=f'answer {n}')], model_name='test', timestamp=at)


def messages(*numbers: int) -> list[ModelMessage]:
    return [message(n) for n in numbers]


def registration(
    run_id: str | None = None,
    *,
    conversation_id: str | None = 'conv',
    parent_run_id: str | None = None,
    agent_name: str | None = None,
    metadata: dict[str, str] | None = None,
    token: str = 'token-1',
) -> RunRegistration:
    return RunRegistration(
        run_id=run_id or f'run-{uuid.uuid4().hex[:8]}',
        conversation_id=conversation_id,
        parent_run_id=parent_run_id,
        agent_name=agent_name,
        metadata=metadata or {},
        token=token,
    )


def encode(previous: Sequence[str], current: Sequence[str]) -> tuple[list[Segment], list[str]]:
    """The reference encoder: copy the longest runs of `previous`, carry everything else as new.

    Deliberately simple (quadratic): it is the oracle the stores' readback is checked against.
    """
    positions: dict[str, list[int]] = {}
    for position, body in enumerate(previous):
        positions.setdefault(body, []).append(position)
    segments: list[Segment] = []
    new: list[str] = []
    i = 0
    while i < len(current):
        best_start, best_length = -1, 0
        for start in positions.get(current[i], []):
            length = 0
            while (
                start + length < len(previous)
                and i + length < len(current)
                and previous[start + length] == current[i + length]
            ):
                length += 1
            if length > best_length:
                best_start, best_length = start, length
        if best_length:
            segments.append((best_start, best_start + best_length))
            i += best_length
        else:
            if segments and segments[-1][0] == -1:
                segments[-1] = (-1, segments[-1][1] + 1)
            else:
                segments.append((-1, 1))
            new.append(current[i])
            i += 1
    return segments, new


def delta(
    run_id: str,
    index: int,
    previous: Sequence[ModelMessage],
    current: Sequence[ModelMessage],
    *,
    state: SnapshotState = 'complete',
    step_index: int | None = None,
) -> SnapshotDelta:
    """The delta that turns snapshot `previous` into `current`, by the reference encoder."""
    segments, new = encode(dump_messages(previous), dump_messages(current))
    return SnapshotDelta(
        run_id=run_id,
        index=index,
        step_index=index if step_index is None else step_index,
        state=state,
        segments=segments,
        messages=new,
    )


async def save_history(
    store: StepStore, run_id: str, history: Sequence[Sequence[ModelMessage]], *, start: int = 0
) -> None:
    """Save each snapshot of `history` as a delta against the one before it."""
    previous: Sequence[ModelMessage] = []
    for index, current in enumerate(history):
        if index >= start:
            assert await store.save_snapshot(delta(run_id, index, previous, current))
        previous = current


_TEXT_OF_MICROS = (
    "strftime('%Y-%m-%dT%H:%M:%S', {column} / 1000000, 'unixepoch') || '.'"
    " || printf('%06d', {column} % 1000000) || '+00:00'"
)

SQLITE_TIMES_AS_TEXT = tuple(
    f"UPDATE {{{table}}} SET {column} = {_TEXT_OF_MICROS.format(column=column)} WHERE typeof({column}) = 'integer'"
    for table, column in (('runs', 'started_at'), ('snapshots', 'saved_at'))
)
"""Statements (tables as `{runs}`, `{snapshots}`) that store a SQLite file's run and snapshot times
as ISO text again, as schema versions before 11 did: what a test that sets a file written by this
release back to an older version runs first (times since 1970 only)."""


SQLITE_LOG_BY_RUN_ID = (
    'CREATE TABLE dr_runs_v12 ('
    ' run_id TEXT PRIMARY KEY NOT NULL, conversation_id TEXT, parent_run_id TEXT, agent_name TEXT,'
    ' metadata TEXT NOT NULL, started_at INTEGER NOT NULL, token TEXT NOT NULL) WITHOUT ROWID',
    'INSERT INTO dr_runs_v12 SELECT run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
    ' FROM dr_runs',
    'CREATE TABLE dr_messages_v12 (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL)',
    'INSERT INTO dr_messages_v12 SELECT r.run_id, m.seq, m.body FROM dr_messages AS m'
    ' JOIN dr_runs AS r ON r.run_no = m.run_no ORDER BY m.rowid',
    'CREATE TABLE dr_message_refs_v12 (run_id TEXT NOT NULL, seq INTEGER NOT NULL, count INTEGER NOT NULL,'
    ' ref_run_id TEXT NOT NULL, ref_seq INTEGER NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID',
    'INSERT INTO dr_message_refs_v12 SELECT r.run_id, f.seq, f.count, t.run_id, f.ref_seq FROM dr_message_refs AS f'
    ' JOIN dr_runs AS r ON r.run_no = f.run_no JOIN dr_runs AS t ON t.run_no = f.ref_run_no',
    'DROP TABLE dr_messages',
    'DROP TABLE dr_message_refs',
    'DROP TABLE dr_runs',
    'ALTER TABLE dr_runs_v12 RENAME TO dr_runs',
    'ALTER TABLE dr_messages_v12 RENAME TO dr_messages',
    'ALTER TABLE dr_message_refs_v12 RENAME TO dr_message_refs',
    'CREATE INDEX dr_runs_by_conversation ON dr_runs (conversation_id, started_at, run_id)',
    'CREATE INDEX dr_runs_by_parent ON dr_runs (parent_run_id, started_at, run_id) WHERE parent_run_id IS NOT NULL',
    'CREATE UNIQUE INDEX dr_messages_by_seq ON dr_messages (run_id, seq)',
)
"""Statements that give a SQLite file written by this release the run and log tables of schema version 12
(runs keyed by id, the log naming runs by id): what a test that sets such a file back to an older
version runs first, so that the upgrade it then watches starts from tables that version had."""


def sqlite_log_by_run_id(conn: sqlite3.Connection) -> None:
    """Run `SQLITE_LOG_BY_RUN_ID` on a plain connection to a step store's file."""
    for statement in SQLITE_LOG_BY_RUN_ID:
        conn.execute(statement)


def sqlite_times_as_text(conn: sqlite3.Connection) -> None:
    """Run `SQLITE_TIMES_AS_TEXT` on a plain connection to a step store's file."""
    for statement in SQLITE_TIMES_AS_TEXT:
        conn.execute(statement.format(runs='dr_runs', snapshots='dr_snapshots'))


async def postgres_without_groups(conn: Any, schema: str, prefix: str = 'dr_') -> None:
    """Set a Postgres schema written by this release back to before its groups (step store's version 12).

    Each grouped open tail becomes the row of its own that version 11 wrote, then the groups' table
    and the scopes' `group_bits` column go: what a test that sets a schema back to an older version
    runs first. `conn` is a psycopg connection in autocommit mode.
    """
    from durable_recall.stores.postgres._groups import unpack_group

    name = f'"{schema}".{prefix}'
    cur = await conn.execute(f'SELECT scope_key, terms FROM {name}index_groups'.encode())
    for scope_key, data in await cur.fetchall():
        for term, tail in unpack_group(bytes(data)).items():
            await conn.execute(
                f'INSERT INTO {name}index_postings (scope_key, term, chunk, postings) VALUES (%s, %s, 0, %s)'.encode(),
                (scope_key, term, tail),
            )
    await conn.execute(f'DROP TABLE {name}index_groups'.encode())
    await conn.execute(f'ALTER TABLE {name}index_scopes DROP COLUMN group_bits'.encode())
