"""Every message part pydantic-ai defines survives a store, message for message."""

from __future__ import annotations

import pytest
from pydantic_ai import messages as m

from durable_recall.base._codec import dump_messages, load_messages
from durable_recall.base._records import SnapshotDelta
from durable_recall.stores import StepStore

from ._all_parts import (
    LEGACY_PART_CLASSES,
    defined_content_classes,
    defined_part_classes,
    every_part_conversation,
    used_classes,
)
from ._helpers import registration, save_history

pytestmark = pytest.mark.anyio


def test_the_conversation_covers_every_defined_part_and_content_class() -> None:
    parts, contents = used_classes(every_part_conversation())

    assert defined_part_classes() - parts == set(), 'a pydantic-ai part type is missing from _all_parts.py'
    assert defined_content_classes() - contents == set(), 'a pydantic-ai content type is missing from _all_parts.py'


async def test_every_part_round_trips(store: StepStore) -> None:
    # Read back as core itself reads its own JSON, so constructor-side defaults (a narrowed
    # BinaryImage, an inferred media type) are already filled in on both sides.
    original = load_messages(dump_messages(every_part_conversation()))
    await store.register_run(registration('run-1'))
    bodies = dump_messages(original)

    assert await store.save_snapshot(
        SnapshotDelta(
            run_id='run-1', index=0, step_index=0, state='complete', segments=[(-1, len(bodies))], messages=bodies
        )
    )
    # Then every message again, each copied from the stored snapshot, in reverse order.
    reverse = [(i, i + 1) for i in reversed(range(len(bodies)))]
    assert await store.save_snapshot(
        SnapshotDelta(run_id='run-1', index=1, step_index=1, state='complete', segments=reverse, messages=[])
    )

    first, second = await store.list_snapshots('run-1')
    assert len(first.messages) == len(original)
    for read, saved in zip(first.messages, original, strict=True):
        assert read == saved
    assert second.messages == original[::-1]
    assert dump_messages(first.messages) == bodies


async def test_a_legacy_retry_prompt_reads_back_as_its_translation(store: StepStore) -> None:
    legacy = every_part_conversation()[-1]
    assert any(isinstance(part, tuple(LEGACY_PART_CLASSES)) for part in legacy.parts)
    await store.register_run(registration('run-1'))
    bodies = dump_messages([legacy])

    await store.save_snapshot(
        SnapshotDelta(run_id='run-1', index=0, step_index=0, state='complete', segments=[(-1, 1)], messages=bodies)
    )

    latest = await store.latest_snapshot('run-1')
    assert latest is not None
    [read] = latest.messages
    assert read == load_messages(bodies)[0]
    retried = [p for p in read.parts if isinstance(p, m.ToolReturnPart) and p.tool_call_id == 'call-legacy']
    assert [(p.outcome, p.content) for p in retried] == [('retried', 'legacy: try again')]


@pytest.mark.parametrize(
    'text',
    [
        pytest.param('bad byte: \udcff, CJK: 東京', id='low'),
        # pydantic-core's parser says 'unexpected end of hex escape' for a high surrogate before
        # anything but another escape, with no word of surrogates: the reader must not need one.
        pytest.param('\ud800', id='high-alone'),
        pytest.param('path \ud83d/x', id='high-before-text'),
        pytest.param('\ud800\ud800 twice', id='high-twice'),
    ],
)
async def test_text_with_a_lone_surrogate_round_trips(store: StepStore, text: str) -> None:
    # A tool that decoded broken bytes with 'surrogateescape' can hand back such text.
    broken = [m.ModelRequest(parts=[m.UserPromptPart(content=text)])]
    await store.register_run(registration('run-s'))
    await save_history(store, 'run-s', [broken])
    (snapshot,) = await store.list_snapshots('run-s')
    assert snapshot.messages == broken
