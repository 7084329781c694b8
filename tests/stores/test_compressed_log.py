"""Message bodies: checksummed, compressed when smaller, old rows still read, and a v2 database upgrades."""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from durable_recall.base import _codec, _errors
from durable_recall.base._codec import MessageDecodeError, decode_body, dump_messages, encode_body, load_messages
from durable_recall.base._records import SnapshotDelta
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import (
    POSTGRES_META,
    POSTGRES_MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_META,
    SQLITE_MIGRATIONS,
)
from durable_recall.stores.postgres._connect import TABLES
from tests._services.stores import StoreKit

from ._all_parts import every_part_conversation
from ._helpers import delta, messages, registration, save_history
from ._log_rows import log_entries

pytestmark = pytest.mark.anyio

_DICTIONARY_SHA256 = 'c370123ff4ba70987109027483c451446d1e8b5391d92df05954b9a0fe7e9e1f'
"""SHA-256 of the compression dictionary (compatibility data)."""


class TestCodec:
    def test_the_dictionary_never_changes(self) -> None:
        # Every body compressed under tag 0x01 needs these exact bytes to decode: a new dictionary
        # needs a new tag, never an edit.
        digest = hashlib.sha256(_codec._DICTIONARY).hexdigest()
        assert (len(_codec._DICTIONARY), digest) == (2499, _DICTIONARY_SHA256)

    @pytest.mark.parametrize(
        'body',
        [
            pytest.param('{}', id='tiny'),
            pytest.param('{"content":"é ü 漢字 🎉"}' * 20, id='unicode'),
            pytest.param('{"content":"\\ud800 lone surrogate, escaped"}' * 20, id='escaped-surrogate'),
            pytest.param('{"content":"' + 'x' * 200_000 + '"}', id='large'),
        ],
    )
    def test_a_body_round_trips(self, body: str) -> None:
        assert decode_body(encode_body(body)) == body

    def test_a_body_is_compressed_only_when_that_is_smaller(self) -> None:
        assert encode_body('{}') == b'\x03' + zlib.crc32(b'{}').to_bytes(4, 'little') + b'{}'
        for body in dump_messages(every_part_conversation()):
            stored = encode_body(body)
            assert isinstance(stored, bytes) and stored[1:5] == zlib.crc32(body.encode()).to_bytes(4, 'little')
            if stored[0] == 0x02:
                assert len(stored) < len(body.encode()) + 5
            else:
                assert stored == b'\x03' + stored[1:5] + body.encode()

    def test_no_single_byte_flip_reads_back_as_other_text(self) -> None:
        # A flipped bit can leave DEFLATE data that still inflates, to other text: the checksum
        # is what tells (earlier releases read 38 of 300 such flips back as other messages).
        for body in dump_messages(messages(3)) + ['{}']:
            stored = encode_body(body)
            assert isinstance(stored, bytes)
            for position in range(len(stored)):
                for flip in (0x01, 0x80, 0xFF):
                    damaged = bytearray(stored)
                    damaged[position] ^= flip
                    try:
                        read = decode_body(bytes(damaged))
                    except MessageDecodeError:
                        continue
                    # Only a flip in the padding bits after DEFLATE's last code reads back at all,
                    # and then as exactly what was written.
                    assert read == body, (position, flip)

    def test_bodies_of_earlier_releases_still_read(self) -> None:
        [body] = dump_messages(messages(3))
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=_codec._DICTIONARY)
        legacy = b'\x01' + packer.compress(body.encode()) + packer.flush()
        assert decode_body(legacy) == body
        assert decode_body(body) == body  # a text body, stored as it was

    def test_the_dictionary_makes_a_typical_message_much_smaller(self) -> None:
        [body] = dump_messages(messages(3))
        stored = encode_body(body)
        assert isinstance(stored, bytes)
        assert len(stored) < len(body) / 3

    @pytest.mark.parametrize(
        ('stored', 'error'),
        [
            pytest.param(b'', r'unknown format \(empty\)', id='empty'),
            pytest.param(b'\x07abc', 'unknown format 07', id='unknown-tag'),
            pytest.param(b'\x01\xff\xff\xff', 'does not decompress', id='not-deflate'),
            pytest.param(b'\x01' + b'\x00' * 3, 'truncated', id='truncated'),
            pytest.param(b'\x02\x00\x00', 'unknown format 02', id='checksum-cut'),
            pytest.param(b'\x03\x00\x00\x00\x00{}', 'checksum', id='wrong-checksum'),
        ],
    )
    def test_bytes_that_are_not_a_compressed_body_are_refused(self, stored: bytes, error: str) -> None:
        with pytest.raises(MessageDecodeError, match=error):
            decode_body(stored)

    def test_a_truncated_body_is_refused(self) -> None:
        [body] = dump_messages(messages(4))
        stored = encode_body(body)
        assert isinstance(stored, bytes)
        with pytest.raises(MessageDecodeError, match='truncated|does not decompress|checksum'):
            decode_body(stored[: len(stored) // 2])


async def test_every_part_is_stored_compressed_and_reads_back(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    original = load_messages(dump_messages(every_part_conversation()))
    bodies = dump_messages(original)
    await store.register_run(registration('run-1'))
    assert await store.save_snapshot(
        SnapshotDelta(
            run_id='run-1', index=0, step_index=0, state='complete', segments=[(-1, len(bodies))], messages=bodies
        )
    )

    entries = await log_entries(sql_kit, 'run-1')
    expected = ['compressed' if isinstance(encode_body(body), bytes) else 'text' for body in bodies]
    assert [kind for kind, _, _ in entries] == expected
    assert expected.count('compressed') > len(bodies) // 2
    [snapshot] = await store.list_snapshots('run-1')
    assert snapshot.messages == original
    assert await store.latest_snapshot('run-1') == snapshot
    assert await store.read_messages('run-1', snapshot.seqs) == dict(enumerate(original))


async def _set_stored_body(kit: StoreKit, run_id: str, seq: int, stored: bytes) -> None:
    if kit.backend == 'sqlite':
        await kit.query('UPDATE {messages} SET body = ? WHERE {of_run} AND seq = ?', stored, run_id, seq)
    else:
        await kit.query('UPDATE {messages} SET body = NULL, data = ? WHERE {of_run} AND seq = ?', stored, run_id, seq)


@pytest.mark.parametrize(
    ('stored', 'reason'),
    [
        pytest.param(b'\x01\xff\xff\xff', 'does not decompress', id='not-deflate'),
        pytest.param(b'\x07abc', 'unknown format 07', id='unknown-tag'),
        pytest.param(None, 'truncated|does not decompress|checksum', id='truncated'),
    ],
)
async def test_a_corrupt_compressed_body_raises_naming_run_and_index(
    sql_kit: StoreKit, stored: bytes | None, reason: str
) -> None:
    store = sql_kit.store
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1), messages(0, 1, 2, 3)])
    if stored is None:
        [body] = dump_messages(messages(3))
        whole = encode_body(body)
        assert isinstance(whole, bytes)
        stored = whole[: len(whole) // 2]
    await _set_stored_body(sql_kit, 'run-1', 3, stored)

    for read in (store.list_snapshots('run-1'), store.latest_snapshot('run-1')):
        with pytest.raises(_errors.CorruptSnapshotError, match=reason) as caught:
            await read
        assert (caught.value.run_id, caught.value.index) == ('run-1', 1)
        assert 'message 3 of the run log' in caught.value.reason
    with pytest.raises(_errors.CorruptSnapshotError, match=reason) as caught:
        await store.read_messages('run-1', [2, 3])
    assert (caught.value.run_id, caught.value.index) == ('run-1', -1)
    assert await store.read_messages('run-1', [2]) == {2: messages(2)[0]}


# A version-2 store: text bodies, and a conversation's next run holding copies of what it inherited.
_AT = '2025-01-01T00:00:0{}.000000+00:00'


def _v2_rows() -> list[tuple[str, tuple[Any, ...]]]:
    body = dump_messages(messages(0, 1, 2, 3, 4))
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('parent', 'c', '{}', _AT.format(1), 't')),
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('child', 'c', '{}', _AT.format(2), 't')),
    ]
    for seq in range(4):
        rows.append(('INSERT INTO {messages} VALUES (?, ?, ?)', ('parent', seq, body[seq])))
    for seq, number in enumerate((2, 3, 4)):  # the child's copies of parent messages 2 and 3, then its own
        rows.append(('INSERT INTO {messages} VALUES (?, ?, ?)', ('child', seq, body[number])))
    for run_id, index, ranges, size in [
        ('parent', 0, '[[0,2]]', 2),
        ('parent', 1, '[[0,4]]', 4),
        ('child', 0, '[[0,3]]', 3),
    ]:
        rows.append(
            (
                'INSERT INTO {snapshots} VALUES (?, ?, ?, ?, ?, ?, ?)',
                (run_id, index, index, 'complete', _AT.format(3), ranges, size),
            )
        )
    rows.append(('INSERT INTO {pending} VALUES (?, ?, ?)', ('c', 'parent', 1)))
    rows.append(('INSERT INTO {pending} VALUES (?, ?, ?)', ('c', 'child', 0)))
    return rows


async def _check_v2_upgrade(kit: StoreKit) -> None:
    store: StepStore = kit.store
    assert [s.messages for s in await store.list_snapshots('parent')] == [messages(0, 1), messages(0, 1, 2, 3)]
    assert [s.messages for s in await store.list_snapshots('child')] == [messages(2, 3, 4)]
    assert await store.read_messages('child', [0, 2]) == {0: messages(2)[0], 2: messages(4)[0]}
    # The old rows are kept as they were: text.
    assert [kind for kind, _, _ in await log_entries(kit, 'parent')] == ['text'] * 4
    assert [kind for kind, _, _ in await log_entries(kit, 'child')] == ['text'] * 3

    # New rows are compressed, and a new run refers to the old text rows it inherits.
    assert await store.save_snapshot(delta('child', 1, messages(2, 3, 4), messages(2, 3, 4, 5)))
    await store.register_run(registration('grandchild', conversation_id='c'))
    assert await store.save_snapshot(
        SnapshotDelta(
            run_id='grandchild',
            index=0,
            step_index=0,
            state='complete',
            segments=[(0, 4), (-1, 1)],
            messages=dump_messages(messages(6)),
            base_run_id='child',
            base_index=1,
        )
    )
    assert (await log_entries(kit, 'child'))[3] == ('compressed', None, None)
    assert await log_entries(kit, 'grandchild') == [
        ('ref', 'child', 0),
        ('ref', 'child', 1),
        ('ref', 'child', 2),
        ('ref', 'child', 3),
        ('compressed', None, None),
    ]
    [snapshot] = await store.list_snapshots('grandchild')
    assert snapshot.messages == messages(2, 3, 4, 5, 6)
    assert await store.read_messages('grandchild', snapshot.seqs) == dict(enumerate(messages(2, 3, 4, 5, 6)))
    assert await store.delete_conversation('c') == 3
    assert await store.list_snapshots('parent') == []


class TestVersion2Upgrade:
    async def test_a_version_2_sqlite_file_upgrades_and_its_text_bodies_read_back(self, tmp_path: Path) -> None:
        path = tmp_path / 'v2.db'
        names = {name: f'dr_{name}' for name in TABLES}
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute(SQLITE_META)
            for statement in (*SQLITE_MIGRATIONS[0], *SQLITE_MIGRATIONS[1]):
                conn.execute(statement)
            conn.execute("INSERT INTO dr_meta VALUES ('schema_version', '2')")
            for statement, params in _v2_rows():
                conn.execute(statement.format(**names), params)

        kit = StoreKit('sqlite', SqliteStepStore(path), sqlite_path=path)
        try:
            await _check_v2_upgrade(kit)
        finally:
            await kit.store.aclose()
        with closing(sqlite3.connect(path)) as conn:
            found = conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall()
            assert found == [(str(SCHEMA_VERSION),)] == [(str(SCHEMA_VERSION),)]

    async def test_a_version_2_postgres_schema_upgrades_and_its_text_bodies_read_back(
        self, postgres_url: str, postgres_schema: str
    ) -> None:
        import psycopg

        names = {name: f'"{postgres_schema}".dr_{name}' for name in TABLES}
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            for statement in (POSTGRES_META, *POSTGRES_MIGRATIONS[0], *POSTGRES_MIGRATIONS[1]):
                await conn.execute(statement.format(**names).encode())
            await conn.execute(f"INSERT INTO {names['meta']} VALUES ('schema_version', '2')".encode())
            for statement, params in _v2_rows():
                await conn.execute(statement.format(**names).replace('?', '%s').encode(), params)

        store = PostgresStepStore(postgres_url, schema=postgres_schema)
        kit = StoreKit('postgres', store, postgres_url=postgres_url, postgres_schema=postgres_schema)
        try:
            await _check_v2_upgrade(kit)
        finally:
            await store.aclose()
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            cur = await conn.execute(f"SELECT value FROM {names['meta']} WHERE key = 'schema_version'".encode())
            assert await cur.fetchall() == [(str(SCHEMA_VERSION),)]
