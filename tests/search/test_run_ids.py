"""Answers show long run ids by their end; a search's `run_id` accepts what an answer showed."""

from __future__ import annotations

import pytest

from durable_recall.search import ConversationSearch
from durable_recall.search._run_ids import short_ids

from ._stub import StubSource, context, reply, request, user

pytestmark = pytest.mark.anyio

LONG_A = '01a24800-0000-7000-8000-0000aaaa1111'
LONG_B = '01a24800-0000-7000-8000-0000bbbb2222'
LONG_C = '01a24800-0000-7000-8000-0000cccc1111'  # ends as LONG_A does


def test_short_ids_keep_short_ids_whole_and_lengthen_shared_ends() -> None:
    names = short_ids({1: 'r1', 2: LONG_A, 3: LONG_B, 4: LONG_C})
    assert names[1] == 'r1'
    assert names[3] == '…bbbb2222'
    assert names[2] != names[4] and LONG_A.endswith(names[2][1:]) and LONG_C.endswith(names[4][1:])


def source() -> StubSource:
    stub = StubSource()
    stub.add(LONG_A, [user('the ZEBRA code is 4417'), reply('noted')])
    stub.add(LONG_B, [user('another ZEBRA remark'), reply('ok')])
    stub.add('01a24800-0000-7000-8000-0000dddd3333', [user('ZEBRA in another conversation')], conversation_id='c2')
    return stub


async def test_a_shown_id_works_as_a_run_id_follow_up() -> None:
    tool = ConversationSearch(source(), scope='conversation', context_lines=0)
    answer = await tool.search(context(), request('zebra'))
    assert 'run: …aaaa1111' in answer and LONG_A not in answer
    for shown in ('…aaaa1111', '...aaaa1111', 'aaaa1111', '01a24800-0000-7000-8000-0000aaaa', LONG_A):
        one = await tool.search(context(), request('zebra', run_id=shown))
        assert '4417' in one and 'another ZEBRA' not in one, shown


async def test_a_short_id_never_reaches_another_conversation_or_two_runs() -> None:
    tool = ConversationSearch(source(), scope='conversation', context_lines=0)
    assert await tool.search(context(), request('zebra', run_id='dddd3333')) == (
        "No persisted history for run 'dddd3333'."
    )
    assert 'No persisted history' in await tool.search(context(), request('zebra', run_id='01a24800'))  # both runs
    assert 'No persisted history' in await tool.search(context(), request('zebra', run_id='…11'))  # too short
