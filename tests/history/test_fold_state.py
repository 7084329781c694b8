"""The fold state's stored form: compact bytes, earlier JSON still read, damage refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from durable_recall.history import FoldState, RecordBuilder

from ._messages import reply, user

DIGEST = 'ab' * 16


def state() -> FoldState:
    return FoldState(
        size=300,
        marker=17,
        previous=((DIGEST, 0, 4096, 299), ('cd' * 16, 1, -1, None), ('ef' * 16, 2, 0, 0)),
        record={12: '01' * 16, 299: '23' * 16},
    )


def stored(original: FoldState) -> FoldState:
    """What reading `original` back gives: hashes only where an entry has no log number to re-read."""
    return FoldState(
        size=original.size,
        marker=original.marker,
        previous=tuple(
            (digest if seq < 0 else '', body, seq, record) for digest, body, seq, record in original.previous
        ),
        record=dict.fromkeys(original.record, ''),
    )


def test_round_trips_without_the_hashes_a_resume_recomputes() -> None:
    assert FoldState.from_bytes(state().to_bytes()) == stored(state())


def test_a_window_is_a_few_bytes() -> None:
    # A chat run's window: 20 entries following one another in body, log and record positions.
    window = FoldState(
        size=4000,
        marker=3980,
        previous=tuple((f'{k:032x}', k, 1000 + k, 3980 + k) for k in range(20)),
        record={3990: '01' * 16},
    )
    assert len(window.to_bytes()) <= 16
    assert FoldState.from_bytes(window.to_bytes()) == stored(window)


def test_the_version_1_binary_state_still_reads_with_its_hashes() -> None:
    # version 1, size 300, marker 17, one entry (hash, body 0, log 4095 + 1, record 299 + 1), no record hashes
    version_1 = bytes.fromhex('01ac02110110' + 'ab' * 16 + '008020ac0200')
    assert FoldState.from_bytes(version_1) == FoldState(
        size=300, marker=17, previous=(('ab' * 16, 0, 4095, 299),), record={}
    )


def test_is_less_than_a_fifth_of_the_json_of_earlier_releases() -> None:
    old = json.dumps(
        {
            'size': 300,
            'marker': 17,
            'previous': [list(entry) for entry in state().previous],
            'record': [[position, digest] for position, digest in sorted(state().record.items())],
        },
        separators=(',', ':'),
    )
    assert len(state().to_bytes()) * 5 < len(old)
    assert FoldState.from_bytes(old.encode()) == state(), 'what earlier releases stored still resumes'


def test_whole_sha256_digests_of_earlier_releases_read_back_truncated() -> None:
    old = json.dumps({'size': 1, 'marker': 0, 'previous': [['ab' * 32, 0, 7, 0]], 'record': [[0, 'cd' * 32]]})
    assert FoldState.from_bytes(old.encode()) == FoldState(
        size=1, marker=0, previous=(('ab' * 16, 0, 7, 0),), record={0: 'cd' * 16}
    )


def test_a_builder_state_round_trips() -> None:
    builder = RecordBuilder()
    builder.fold([user('a'), reply('b'), user('c')], seqs=[0, 1, 2])
    assert FoldState.from_bytes(builder.state.to_bytes()) == stored(builder.state)


@pytest.mark.parametrize(
    'damaged',
    [
        state().to_bytes()[:-1],  # truncated
        state().to_bytes() + b'\x00',  # trailing bytes
        b'\x09' + state().to_bytes()[1:],  # unknown version
        b'',
        b'{"size": "x"}',
    ],
)
def test_damage_is_refused_not_misread(damaged: bytes) -> None:
    with pytest.raises(ValueError, match='not a record builder state'):
        FoldState.from_bytes(damaged)


def test_builders_sharing_digests_hash_an_inherited_body_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from durable_recall.history import _rebuild, message_hash

    calls: list[object] = []

    def counting(message: Any) -> str:
        calls.append(message)
        return message_hash(message)

    monkeypatch.setattr(_rebuild, 'message_hash', counting)
    window = [user('a'), reply('b'), user('c')]
    bodies = ['body-a', 'body-b', 'body-c']
    digests: dict[object, str] = {}
    first = RecordBuilder(digests=digests)
    first.fold(window, bodies=bodies)
    assert len(calls) == 3
    second = RecordBuilder(digests=digests)
    second.fold([*window, user('d')], bodies=[*bodies, 'body-d'])
    assert len(calls) == 4, 'only the new body is hashed'
    alone = RecordBuilder()
    alone.fold([*window, user('d')])
    assert second.hashes == alone.hashes
