"""The rows of the runs and index-runs tables, decoded: shared by the SQLite and Postgres stores.

Both SQL stores hold the same tables, so turning a row back into a record, and refusing a row
that cannot be turned back, lives here once. A run row whose labels or start time do not decode
raises [`CorruptRunError`][durable_recall.errors.CorruptRunError] naming the run, never a guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from ..base import CorruptRunError, RunRecord, stored_time
from ..index import IndexedRunRow

__all__ = ('decode_metadata', 'encode_metadata', 'indexed_run', 'missing_run', 'run_record', 'stored_name')


def encode_metadata(metadata: Mapping[str, str]) -> str:
    """Compact JSON text of a run's labels, keys sorted so equal labels store equal text."""
    return json.dumps(dict(metadata), ensure_ascii=False, separators=(',', ':'), sort_keys=True)


def decode_metadata(run_id: str, text: str) -> dict[str, str]:
    """Parse a run's labels.

    Raises:
        DurableRecallError: The stored text is not a JSON object of strings.
    """
    try:
        value: Any = json.loads(text)
    except ValueError as error:
        raise _corrupt_run(run_id, f'metadata is not JSON ({error})') from error
    if not isinstance(value, dict):
        raise _corrupt_run(run_id, 'metadata is not a JSON object')
    items = cast(dict[Any, Any], value)
    if not all(isinstance(key, str) and isinstance(label, str) for key, label in items.items()):
        raise _corrupt_run(run_id, 'metadata holds a value that is not a string')
    return cast(dict[str, str], items)


def run_record(
    run_id: str,
    conversation_id: str | None,
    parent_run_id: str | None,
    agent_name: str | None,
    metadata: str,
    started_at: datetime | str | int,
    token: str,
) -> RunRecord:
    """Build a `RunRecord` from the columns of a runs row.

    Raises:
        DurableRecallError: The row's metadata or timestamp cannot be decoded.
    """
    if not isinstance(run_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise _corrupt_run(stored_name(run_id), f'the run id is stored as a {type(run_id).__name__}, not text')
    try:
        started = stored_time(started_at)
    except ValueError as error:
        raise _corrupt_run(run_id, f'started_at {error}') from error
    if not isinstance(metadata, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise _corrupt_run(run_id, f'metadata is a {type(metadata).__name__}, not JSON text')
    labels: tuple[tuple[str, object], ...] = (
        ('conversation_id', conversation_id),
        ('parent_run_id', parent_run_id),
        ('agent_name', agent_name),
    )
    for name, value in (*labels, ('token', token)):
        if not isinstance(value, str) and (value is not None or name == 'token'):
            raise _corrupt_run(run_id, f'{name} is a {type(value).__name__}, not text')
    return RunRecord(
        run_id=run_id,
        conversation_id=conversation_id,
        parent_run_id=parent_run_id,
        agent_name=agent_name,
        metadata=decode_metadata(run_id, metadata),
        started_at=started,
        token=token,
    )


def indexed_run(
    run_key: int,
    run_id: str,
    scope_key: int,
    seen: int,
    first: int,
    lengths: bytes,
    seqs: bytes,
    roles: bytes,
    times: bytes,
    state: bytes | str,
    started_at: str = '',
) -> IndexedRunRow:
    """Build an `IndexedRunRow` from the columns of an index runs row, in table order.

    The state is bytes whatever the row holds: a SQLite row written before schema version 5 holds
    JSON text, read back as its UTF-8 bytes (which the index still reads as a JSON state).
    """
    if isinstance(state, str):
        state = state.encode()
    return IndexedRunRow(
        run_key=run_key,
        run_id=run_id,
        scope_key=scope_key,
        seen=seen,
        first=first,
        lengths=lengths,
        seqs=seqs,
        roles=roles,
        times=times,
        state=state,
        started_at=started_at,
    )


def stored_name(value: object) -> str:
    """A printable name for a stored key of any type: text as it is, UTF-8 bytes as their text, other bytes as hex."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return f"x'{value.hex()}'"
    return str(value)


def missing_run(run_id: str) -> CorruptRunError:
    """The error for a run whose row is gone (or unreadable by its id) while its snapshots are stored.

    A run is registered before any snapshot of it is saved, and deleted with them, so snapshots
    without a run row are a lost row, never a run that does not exist.
    """
    return CorruptRunError(
        run_id, 'its row is missing (or its id is stored as another type), but its snapshots are stored'
    )


def _corrupt_run(run_id: str, reason: str) -> CorruptRunError:
    return CorruptRunError(run_id, reason)
