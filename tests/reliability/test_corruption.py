"""Damage to every column of the step store's tables, and bit flips in stored bodies (SQLite).

Every public read of the damaged store must either return exactly what the intact store returns,
or raise one of the store's corruption errors (`CorruptSnapshotError`, `CorruptRunError`,
`StoreConfigurationError`): never another exception, never different data. And `durable-recall
check` must name every damaged input (exit 1). Run with `-s` for the counts (docs/reliability.md
quotes them).
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest

from durable_recall import SqliteStepStore
from durable_recall.base import CorruptRunError, CorruptSnapshotError, StoreConfigurationError
from durable_recall.cli import main

from ._corpus import populate, read_all

ALLOWED = (CorruptSnapshotError, CorruptRunError, StoreConfigurationError)

ROWS = {
    'dr_runs': (
        "run_id = 'run-2'",
        ('run_no', 'run_id', 'conversation_id', 'parent_run_id', 'agent_name', 'metadata', 'started_at', 'token'),
    ),
    'dr_snapshots': (
        "run_id = 'run-1' AND idx = 2",
        ('run_id', 'idx', 'step_index', 'state', 'saved_at', 'ranges', 'size'),
    ),
    'dr_messages': (
        "run_no = (SELECT run_no FROM dr_runs WHERE run_id = 'run-1') AND seq = 2",
        ('run_no', 'seq', 'body'),
    ),
    'dr_message_refs': (
        "run_no = (SELECT run_no FROM dr_runs WHERE run_id = 'run-2') AND seq = 0",
        ('run_no', 'seq', 'count', 'ref_run_no', 'ref_seq'),
    ),
}
"""Per table: the row damaged (a middle snapshot, a compressed body, an inherited range) and its columns."""

NUMERIC = {'idx', 'step_index', 'size', 'seq', 'count', 'ref_seq', 'started_at', 'saved_at', 'run_no', 'ref_run_no'}
"""Integer columns (times too: microseconds since the epoch, schema version 11; run numbers, version 13)."""

NULLABLE = {'conversation_id', 'parent_run_id', 'agent_name'}

SUBSTITUTED: list[str] = []
"""Damage that left a well-formed value of the column's own type, read back as it is (see below)."""

KINDS = ('null', 'wrong-type', 'random-bytes')

FLIPS = 300
"""Seeded single-bit flips of stored bodies."""

TALLY: Counter[str] = Counter()


def _value(column: str, kind: str, rng: random.Random) -> Any:
    if kind == 'null':
        return None
    if kind == 'wrong-type':
        return 'x' if column in NUMERIC else 42 if column != 'body' else 4.5
    return rng.randbytes(12)


@pytest.fixture(scope='module')
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, Any]]]:
    """An intact store file and what every read of it returns."""
    path = tmp_path_factory.mktemp('reliability') / 'template.db'

    async def build() -> dict[str, tuple[str, Any]]:
        store = SqliteStepStore(path)
        try:
            await populate(store)
            return await read_all(store)
        finally:
            await store.aclose()

    baseline = anyio.run(build)
    assert all(kind == 'value' for kind, _ in baseline.values())
    with closing(sqlite3.connect(path)) as conn:
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    return path, baseline


def _well_formed(column: str, stored: str) -> bool:
    """Whether the stored value has a type the column legitimately holds."""
    if stored == 'null':
        return column in NULLABLE
    if column == 'body':
        return stored in ('blob', 'text')
    return stored == ('integer' if column in NUMERIC else 'text')


def _judge(baseline: dict[str, tuple[str, Any]], found: dict[str, tuple[str, Any]]) -> Counter[str]:
    """Each read: `exact`, `detected` (an allowed error), `wrong` (other data) or `crash` (another exception)."""
    verdicts: Counter[str] = Counter()
    for name, (kind, value) in found.items():
        if kind == 'value':
            verdicts['exact' if value == baseline[name][1] else 'wrong'] += 1
        else:
            verdicts['detected' if isinstance(value, ALLOWED) else 'crash'] += 1
            if not isinstance(value, ALLOWED):
                print(f'  crash on {name}: {type(value).__name__}: {value}')
    return verdicts


def _read(path: Path) -> dict[str, tuple[str, Any]]:
    async def go() -> dict[str, tuple[str, Any]]:
        store = SqliteStepStore(path)
        try:
            return await read_all(store)
        finally:
            await store.aclose()

    return anyio.run(go)


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """`durable-recall check --json` on the store: its exit status and report."""
    capsys.readouterr()
    status = main(['check', '--store', str(path), '--json'])
    return status, json.loads(capsys.readouterr().out)


CASES = [(table, column, kind) for table, (_, columns) in ROWS.items() for column in columns for kind in KINDS]


@pytest.mark.parametrize(('table', 'column', 'kind'), CASES, ids=['-'.join(case) for case in CASES])
def test_a_damaged_column_reads_exactly_or_raises(
    template: tuple[Path, dict[str, tuple[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    table: str,
    column: str,
    kind: str,
) -> None:
    source, baseline = template
    path = tmp_path / 'damaged.db'
    shutil.copy(source, path)
    where, _ = ROWS[table]
    rng = random.Random(f'{table}.{column}.{kind}')
    with closing(sqlite3.connect(path)) as conn:
        try:
            with conn:
                query = f'UPDATE {table} SET {column} = ? WHERE {where} RETURNING typeof({column})'
                [(stored,)] = conn.execute(query, (_value(column, kind, rng),)).fetchall()
        except sqlite3.IntegrityError:
            TALLY['inputs refused by the schema (NOT NULL, keys)'] += 1
            return
    verdicts = _judge(baseline, _read(path))
    assert verdicts['crash'] == 0, f'a read raised something other than a corruption error: {verdicts}'
    if _well_formed(column, stored):
        # A well-formed value of the column's own type (another run id, another count, NULL where
        # NULL is allowed) is what a legitimate write could have stored: no reader can tell it from
        # one without a checksum over the row. Counted apart, and only required not to crash.
        TALLY['well-formed substitutions tried'] += 1
        TALLY['well-formed substitutions detected'] += bool(verdicts['detected'])
        TALLY['reads of well-formed substitutions returning the substituted data'] += verdicts['wrong']
        if verdicts['wrong']:
            SUBSTITUTED.append(f'{table}.{column}={kind}')
        return
    TALLY['damaged inputs tried'] += 1
    TALLY.update({f'reads {verdict}': count for verdict, count in verdicts.items()})
    TALLY['damaged inputs detected'] += bool(verdicts['detected'])
    TALLY['reads silently wrong'] += verdicts['wrong']
    assert verdicts['wrong'] == 0, f'a read returned other data than was written: {verdicts}'
    status, report = _check(path, capsys)
    assert status == 1 and report['problems'], f'check found nothing: {report}'
    TALLY['damaged inputs named by durable-recall check'] += 1


def test_flipped_bits_in_stored_bodies_read_exactly_or_raise(
    template: tuple[Path, dict[str, tuple[str, Any]]], tmp_path: Path
) -> None:
    source, baseline = template
    path = tmp_path / 'flipped.db'
    shutil.copy(source, path)
    rng = random.Random(14)
    with closing(sqlite3.connect(path)) as conn:
        bodies = conn.execute('SELECT run_no, seq, body FROM dr_messages ORDER BY run_no, seq').fetchall()
    detected = 0
    for _ in range(FLIPS):
        run_no, seq, body = rng.choice(bodies)
        data = bytearray(body if isinstance(body, bytes) else body.encode())
        bit = rng.randrange(len(data) * 8)
        data[bit // 8] ^= 1 << (bit % 8)
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute('UPDATE dr_messages SET body = ? WHERE run_no = ? AND seq = ?', (bytes(data), run_no, seq))
        verdicts = _judge(baseline, _read(path))
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute('UPDATE dr_messages SET body = ? WHERE run_no = ? AND seq = ?', (body, run_no, seq))
        detected += bool(verdicts['detected'])
        TALLY.update({f'flip reads {verdict}': count for verdict, count in verdicts.items()})
        assert verdicts['crash'] == 0 and verdicts['wrong'] == 0, (run_no, seq, bit, verdicts)
    TALLY['bit flips tried'] += FLIPS
    TALLY['bit flips detected'] += detected


def test_print_the_figures() -> None:
    """Last in the file: print what the tests above measured (`pytest -s`)."""
    wrong = TALLY['reads silently wrong'] + TALLY['flip reads wrong']
    print('\nreliability: corruption (SQLite)')
    for key in sorted(TALLY):
        print(f'  {key}: {TALLY[key]}')
    print(f'  silently wrong reads: {wrong}')
    print(f'  well-formed substitutions read back as stored: {", ".join(SUBSTITUTED) or "none"}')
    assert wrong == 0
