"""What the answer shows: a date on every block, context along the conversation, merged windows, budgets."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.search import SearchRequest

from ._stub import T0, StubSource, context, reply, request, user

pytestmark = pytest.mark.anyio

DATE = re.compile(r'^\[score: [0-9.]+ \| run: \S+ \| \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\]$')


def chat(
    source: StubSource, exchanges: list[tuple[str, str]], *, conversation_id: str = 'c1', prefix: str = 'r'
) -> None:
    """One run per exchange, each inheriting everything said before (as a chat app threads history)."""
    history: list[ModelMessage] = []
    for index, (said, answered) in enumerate(exchanges):
        at = T0 + timedelta(days=index, hours=9, minutes=25)
        history = [*history, user(said, at), reply(answered, at + timedelta(minutes=1))]
        source.add(f'{prefix}{index}', history, conversation_id=conversation_id)


def exchanges() -> list[tuple[str, str]]:
    return [
        ('we planned the trip', 'sounds good'),
        ('I visited Lisbon with my sister', 'how was Lisbon?'),
        ('the food was great', 'glad to hear it'),
        ('back to work on ORCA-5521', 'what is blocking it?'),
    ]


class TestDates:
    async def test_every_block_is_dated_with_its_hit(self) -> None:
        source = StubSource()
        chat(source, exchanges())
        answer = await ConversationSearch(source, scope='conversation', context_lines=0).search(
            context(), request('lisbon food work')
        )
        headers = [line for line in answer.splitlines() if line.startswith('[score:')]
        assert len(headers) == 4  # Lisbon twice (the prompt and the reply), food, work
        assert all(DATE.match(header) for header in headers)
        assert any('| run: r1 | 2026-01-02 09:25 UTC]' in header for header in headers)
        assert any('| run: r3 | 2026-01-04 09:25 UTC]' in header for header in headers)


class TestContextAcrossRuns:
    async def test_context_walks_the_conversation(self) -> None:
        source = StubSource()
        chat(source, exchanges())
        answer = await ConversationSearch(source, scope='conversation', context_lines=2).search(
            context(), request('visit')
        )
        assert answer.splitlines()[2:] == [
            # One header (the first line's run and time); a run where it changes, a time after a
            # gap of 10 minutes or more (a reply a minute after its prompt shows none).
            '[score: 1.7 | run: r0 | 2026-01-01 09:25 UTC]',
            ' [0] User: we planned the trip',
            ' [1] Assistant: sounds good',
            '  (run: r1 | 2026-01-02 09:25 UTC)',
            '>[2] User: I visited Lisbon with my sister',
            ' [3] Assistant: how was Lisbon?',
            '  (run: r2 | 2026-01-03 09:25 UTC)',
            ' [4] User: the food was great',
        ]

    async def test_a_time_shows_again_after_a_gap_of_ten_minutes(self) -> None:
        source = StubSource()
        at = T0 + timedelta(hours=9)
        first = [user('the kettle broke', at), reply('buy a kettle', at + timedelta(minutes=9))]
        later = [*first, user('kettle ordered', at + timedelta(minutes=19)), reply('good', at + timedelta(minutes=20))]
        source.add('r0', first, conversation_id='c1')
        source.add('r1', later, conversation_id='c1')
        answer = await ConversationSearch(source, scope='conversation', context_lines=3).search(
            context(), request('kettle')
        )
        # 9 minutes after the line before: no time; 10 minutes after: its time (same date: no date).
        assert answer.splitlines()[2:] == [
            '[score: 0.7 | run: r0 | 2026-01-01 09:00 UTC]',
            ' [0] User: the kettle broke',
            '>[1] Assistant: buy a kettle',  # first: both its neighbours match too
            '  (run: r1 | 09:19)',
            ' [2] User: kettle ordered',
            ' [3] Assistant: good',
        ]

    async def test_a_run_id_search_stays_in_its_run(self) -> None:
        source = StubSource()
        chat(source, exchanges())
        answer = await ConversationSearch(source, scope='conversation', context_lines=2).search(
            context(), request('visit', run_id='r2')
        )
        assert '(run:' not in answer
        assert 'the food was great' in answer  # r2's own record holds what it inherited
        assert 'back to work' not in answer

    async def test_context_never_reaches_another_conversation(self) -> None:
        source = StubSource()
        chat(source, [('alpha secret of bob', 'ok'), ('more bob things', 'ok')], conversation_id='bob', prefix='b')
        chat(source, exchanges())
        chat(source, [('zulu secret of carol', 'ok')], conversation_id='carol', prefix='c')
        tool = ConversationSearch(source, scope='conversation', context_lines=50)
        answer = await tool.search(context('c1'), request('lisbon trip orca'))
        assert 'bob' not in answer and 'carol' not in answer
        assert 'we planned the trip' in answer and 'ORCA-5521' in answer

    async def test_overlapping_windows_merge(self) -> None:
        source = StubSource()
        chat(source, exchanges())
        answer = await ConversationSearch(source, scope='conversation', context_lines=2).search(
            context(), request('trip food')
        )
        assert answer.startswith("2 matches for 'trip food'")
        # Each message is shown once, whichever blocks' windows reach it.
        for text in ('we planned the trip', 'the food was great', 'I visited Lisbon'):
            assert answer.count(text) == 1, answer


class TestBudget:
    @pytest.mark.parametrize('runs', [1, 150])
    async def test_many_unreadable_runs_stay_within_the_budget(self, runs: int) -> None:
        source = StubSource()
        chat(source, exchanges())
        for index in range(runs):
            source.add(f'broken-{index:03d}-' + 'x' * 80, [user('lost')])
            source.corrupt.add(source.runs[-1][0].run_id)
        tool = ConversationSearch(source, scope='conversation', max_result_bytes=16_000)
        for query in ('lisbon', 'nothing-matches-this', ''):
            answer = await tool.search(context(), request(query))
            assert len(answer.encode()) <= 16_000
            assert 'could not be read' in answer
            assert 'broken-000' in answer
        if runs > 1:
            assert 'more' in answer

    async def test_a_small_budget_keeps_room_around_its_matches(self) -> None:
        source = StubSource()
        pad = 'and then we talked about the weather for a long while'
        said = [f'orca sighting {i}, {pad}' if i % 2 == 0 else f'lunch {i}, {pad}' for i in range(24)]
        chat(source, [(text, f'reply {i}: {pad}') for i, text in enumerate(said)])
        answer = await ConversationSearch(source, scope='conversation', max_result_bytes=2048).search(
            context(), request('orca sighting')
        )
        assert len(answer.encode()) <= 2048
        shown = int(answer.split(' ', 1)[0])
        assert answer.count('\n>[') == shown < 10  # matches with partners fill 70% of the budget, no more
        assert 'more matches were left out' in answer
        assert 'lunch' in answer  # the rest shows what was said around them

    async def test_a_match_left_out_that_a_block_reaches_is_marked(self) -> None:
        source = StubSource()
        pad = 'and then we talked about the weather for a long while, nothing else of note'
        chat(source, [(f'orca sighting number {i}, {pad}', f'reply {i}: {pad}') for i in range(12)])
        # BM25 alone: equal scores, so the first ten are chosen (neighbour weighting ranks the ends last).
        search = ConversationSearch(source, scope='conversation', max_result_bytes=2048, neighbour_weights=())
        answer = await search.search(context(), request('orca sighting'))
        sightings = [line for line in answer.splitlines() if 'orca sighting number' in line]
        assert sightings and all(line.startswith('>[') for line in sightings), answer
        shown = int(answer.split(' ', 1)[0])
        # Ten chosen (`max_matches`): those shown, marked, and the rest counted.
        assert shown == len(sightings) and f'{10 - shown} more matches were left out' in answer


class TestAnalyzer:
    async def test_accents_fold_and_inflections_meet(self) -> None:
        source = StubSource()
        chat(source, [('we met at the Café Nicola', 'nice'), ('my birthday cakes were late', 'sorry')])
        tool = ConversationSearch(source, scope='conversation', context_lines=0)
        assert 'Café Nicola' in await tool.search(context(), request('cafe'))
        assert 'birthday cakes' in await tool.search(context(), request('birthdays cake'))


async def test_a_corrupt_body_is_named_and_never_raises(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def reply_to(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('noted: zebra crossing')])

    path = tmp_path / 'store.db'
    store = SqliteStepStore(database=path)
    agent = Agent(FunctionModel(reply_to), capabilities=[StepPersistence(store=store)])
    history = None
    for prompt in ['first zebra', 'second zebra', 'third zebra']:
        result = await agent.run(prompt, message_history=history, conversation_id='c1')
        history = result.all_messages()
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    assert 'zebra' in await tool.search(context(), SearchRequest(query='zebra'))  # indexed
    await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE dr_messages SET body = '{broken' WHERE seq = 0")
    store = SqliteStepStore(database=path)
    try:
        tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
        answer = await tool.search(context(), SearchRequest(query='zebra'))
        assert 'could not be read' in answer, answer
        assert 'zebra' in answer
    finally:
        await store.aclose()
