"""The search tool's answers: layout, ranking, scope, budget, and every odd input."""

from __future__ import annotations

import warnings
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall.base._warnings import DurableRecallDeprecationWarning
from durable_recall.search import ConversationSearch, tool_description

from ._stub import T0, StubSource, context, reply, request, user

pytestmark = pytest.mark.anyio


def six_messages() -> StubSource:
    source = StubSource()
    source.add('r1', [user('alpha beta'), reply('gamma delta'), user('alpha alpha epsilon'), reply('zeta')])
    source.add('r2', [user('beta only here'), reply('no match')], conversation_id=None)
    return source


def search_all(source: StubSource, **kwargs: Any) -> ConversationSearch:
    return ConversationSearch(source, scope='all', **kwargs)


class TestLayout:
    async def test_blocks_name_score_run_and_conversation(self) -> None:
        answer = await search_all(six_messages(), context_lines=1).search(context(), request('alpha beta'))
        assert answer.splitlines()[0] == "3 matches for 'alpha beta' in 6 persisted messages:"
        blocks = answer.split('\n\n---\n\n')
        assert blocks[0].splitlines()[2:] == [
            '[score: 2.4 | run: r1 | conversation: c1 | 2026-01-01 00:00 UTC]',  # 2.1, and a quarter of [2]'s
            '>[0] User: alpha beta',
            ' [1] Assistant: gamma delta',
            '>[2] User: alpha alpha epsilon',  # its window met the first one's: one block, both marked
            ' [3] Assistant: zeta',
        ]
        assert blocks[-1].splitlines()[0] == '[score: 1.0 | run: r2 | 2026-01-01 00:00 UTC]'

    async def test_role_words_are_not_searchable(self) -> None:
        answer = await search_all(six_messages()).search(context(), request('user assistant'))
        assert answer == "No matches for 'user assistant' in 6 persisted messages."

    async def test_positions_equal_a_run_id_search(self) -> None:
        source = StubSource()
        source.add('r1', [user('first'), reply('one')], token='t1')
        inherited = source.runs[0][1]
        source.add('r2', [*inherited, user('ZEBRA here'), reply('two')], token='t2')
        tool = search_all(source, context_lines=0)
        everywhere = await tool.search(context(), request('zebra'))
        one_run = await tool.search(context(), request('zebra', run_id='r2'))
        assert '>[2] User: ZEBRA here' in everywhere
        assert '>[2] User: ZEBRA here' in one_run
        assert '6 persisted messages' not in everywhere  # r2's inherited prefix is r1's
        assert '4 persisted messages' in everywhere

    async def test_context_stays_inside_the_run(self) -> None:
        source = StubSource()
        source.add('r1', [user('before'), reply('ZEBRA end of r1')])
        source.add('r2', [user('start of r2'), reply('after')])
        answer = await search_all(source, context_lines=5).search(context(), request('zebra'))
        assert 'start of r2' not in answer


class TestScope:
    @pytest.fixture
    def two_tenants(self) -> StubSource:
        source = StubSource()
        source.add('r-alice', [user('my passport is X99881234'), reply('noted')], conversation_id='conv-alice')
        source.add('r-bob', [user('my dog is called Rex'), reply('nice')], conversation_id='conv-bob')
        return source

    async def test_conversation_scope_sees_only_its_conversation(self, two_tenants: StubSource) -> None:
        tool = ConversationSearch(two_tenants, scope='conversation')
        answer = await tool.search(context('conv-bob'), request('passport dog'))
        assert 'X99881234' not in answer and 'Rex' in answer
        assert two_tenants.list_calls == ['conv-bob']  # pushed down, not filtered after listing all

    async def test_out_of_scope_run_id_is_answered_like_an_unknown_one(self, two_tenants: StubSource) -> None:
        tool = ConversationSearch(two_tenants, scope='conversation')
        out_of_scope = await tool.search(context('conv-bob'), request('passport', run_id='r-alice'))
        unknown = await tool.search(context('conv-bob'), request('passport', run_id='r-nobody'))
        assert out_of_scope == "No persisted history for run 'r-alice'."
        assert unknown == "No persisted history for run 'r-nobody'."

    async def test_no_conversation_id_fails_closed(self, two_tenants: StubSource) -> None:
        tool = ConversationSearch(two_tenants, scope='conversation')
        answer = await tool.search(context(None), request('passport'))
        assert 'X99881234' not in answer and 'conversation_id=' in answer
        assert two_tenants.list_calls == []

    async def test_all_scope_searches_the_store(self, two_tenants: StubSource) -> None:
        answer = await search_all(two_tenants).search(context(None), request('passport'))
        assert 'X99881234' in answer and 'conversation: conv-alice' in answer

    async def test_empty_answers_depend_on_scope(self) -> None:
        empty = StubSource()
        assert 'No persisted history in this conversation yet' in await ConversationSearch(
            empty, scope='conversation'
        ).search(context(), request('x'))
        assert '`StepPersistence`' in await search_all(empty).search(context(), request('x'))

    def test_description_asks_for_follow_up_searches_on_spread_answers(self) -> None:
        # Answers spread over turns that do not use the question's words are found by searching again.
        for scope in ('conversation', 'all'):
            assert 'search again with the specific words' in tool_description(scope)

    def test_description_and_instructions_follow_the_scope(self) -> None:
        assert 'only the current conversation' in tool_description('conversation')
        assert 'only the current conversation' not in tool_description('all')
        narrow = ConversationSearch(StubSource(), scope='conversation').get_instructions()
        wide = search_all(StubSource()).get_instructions()
        assert narrow is not None and 'same conversation' in narrow
        assert wide is not None and 'same store' in wide and 'same conversation' not in wide
        assert search_all(StubSource(), add_instructions=False).get_instructions() is None


class TestOddInput:
    @pytest.mark.parametrize('query', ['', '!!! ... ???', '\x00\x00'])
    async def test_queries_without_words(self, query: str) -> None:
        answer = await search_all(six_messages()).search(context(), request(query))
        assert 'has no searchable words' in answer

    async def test_a_megabyte_query_is_answered_with_a_short_echo(self) -> None:
        answer = await search_all(six_messages()).search(context(), request('zeta ' * 200_000))
        assert 'Assistant: zeta' in answer
        assert len(answer) < 2_000

    @pytest.mark.parametrize(
        'times', [{'since': '0001-01-01'}, {'until': '9999-12-31T23:59:59'}, {'since': '0001-01-01T00:00:00Z'}]
    )
    async def test_times_at_the_edges_of_the_calendar_get_an_answer(self, times: dict[str, str]) -> None:
        answer = await search_all(six_messages()).search(context(), request('zeta', **times))
        assert isinstance(answer, str) and answer

    async def test_nul_inside_a_query_is_a_separator(self) -> None:
        answer = await search_all(six_messages()).search(context(), request('zeta\x00epsilon'))
        assert 'zeta' in answer and 'epsilon' in answer

    async def test_run_id_with_path_characters(self) -> None:
        answer = await search_all(six_messages()).search(context(), request('alpha', run_id='../../etc/passwd'))
        assert answer == "No persisted history for run '../../etc/passwd'."

    async def test_quotes_in_the_query_are_escaped(self) -> None:
        answer = await search_all(six_messages()).search(context(), request("it's zeta"))
        assert answer.startswith('1 match for "it\'s zeta" in 6')

    async def test_a_corrupt_run_is_named_and_the_rest_searched(self) -> None:
        source = six_messages()
        source.corrupt.add('r2')
        answer = await search_all(source).search(context(), request('alpha'))
        assert 'run: r1' in answer
        assert "run 'r2', snapshot 3 (log ranges are not JSON)" in answer

    async def test_bad_filters_are_explained(self) -> None:
        tool = search_all(six_messages())
        assert 'Unknown role' in await tool.search(context(), request('alpha', roles=['robot']))
        assert 'not an ISO-8601 time' in await tool.search(context(), request('alpha', since='yesterday'))


class TestLimits:
    async def test_max_matches_and_context_lines(self) -> None:
        source = StubSource()
        source.add('r1', [user(f'ZEBRA number {i}') for i in range(20)])
        answer = await search_all(source, max_matches=1, context_lines=0).search(context(), request('zebra'))
        assert answer.count('[score:') == 1
        assert len(answer.split('\n\n', 1)[1].splitlines()) == 2

    async def test_result_stays_within_the_byte_budget(self) -> None:
        source = StubSource()
        source.add('r1', [user(f'ZEBRA {i} ' + 'x' * 450) for i in range(200)])
        answer = await search_all(source, max_matches=100, max_result_bytes=4096).search(context(), request('zebra'))
        assert len(answer.encode()) <= 4096
        assert 'left out to keep this result under 4096 bytes' in answer

    async def test_roles_filter_and_order(self) -> None:
        tool = search_all(six_messages(), context_lines=0)
        only_replies = await tool.search(context(), request('zeta gamma alpha', roles=['assistant']))
        assert only_replies.count('>[') == 2 and 'User:' not in only_replies
        source = StubSource()
        source.add('r1', [user('ZEBRA ZEBRA early', at=T0), user('ZEBRA late', at=T0 + timedelta(hours=1))])
        newest = await search_all(source, context_lines=0).search(context(), request('zebra', order='newest'))
        assert newest.index('late') < newest.index('early')
        window = await search_all(source, context_lines=0).search(
            context(), request('zebra', since=(T0 + timedelta(minutes=1)).isoformat())
        )
        assert 'late' in window and 'early' not in window


class TestConfiguration:
    @pytest.mark.parametrize(
        ('kwargs', 'error', 'message'),
        [
            ({'max_matches': 2.5}, TypeError, 'max_matches must be an int, got 2.5'),
            ({'max_matches': True}, TypeError, 'max_matches must be an int, got True'),
            ({'max_matches': 0}, ValueError, 'max_matches must be at least 1, got 0'),
            ({'context_lines': -1}, ValueError, 'context_lines must be at least 0, got -1'),
            ({'context_lines': 1.5}, TypeError, 'context_lines must be an int, got 1.5'),
            ({'bm25_k1': float('nan')}, ValueError, 'nan'),
            ({'bm25_b': 1.5}, ValueError, '1.5'),
            ({'scope': 'everything'}, ValueError, "scope must be 'conversation' or 'all', got 'everything'"),
            ({'tool_id': ''}, ValueError, "tool_id must be a non-empty string, got ''"),
        ],
    )
    def test_bad_values_are_refused_at_construction(
        self, kwargs: dict[str, Any], error: type[Exception], message: str
    ) -> None:
        kwargs.setdefault('scope', 'all')
        with pytest.raises(error, match=message.replace('(', r'\(')):
            ConversationSearch(StubSource(), **kwargs)

    def test_a_source_that_is_not_one(self) -> None:
        with pytest.raises(TypeError, match='ConversationSearch needs a HistorySource, got dict'):
            ConversationSearch({}, scope='all')  # type: ignore[arg-type]

    def test_unset_scope_warns_once_and_means_conversation(self) -> None:
        with pytest.warns(DurableRecallDeprecationWarning, match="scope='all'") as caught:
            capability = ConversationSearch(StubSource())
            capability.get_toolset()
            capability.get_instructions()
        assert len(caught) == 1
        assert capability.scope is None and capability.effective_scope == 'conversation'

    def test_explicit_scope_never_warns(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            ConversationSearch(StubSource(), scope='conversation')
            ConversationSearch(StubSource(), scope='all')

    def test_the_toolset_is_one_object(self) -> None:
        capability = search_all(StubSource())
        assert capability.get_toolset() is capability.get_toolset()


class TestCombine:
    def test_agreeing_duplicates_become_one(self) -> None:
        source = StubSource()
        agent = Agent('test', capabilities=[search_all(source), search_all(source)])
        assert agent is not None

    def test_the_same_weights_as_a_list_agree(self) -> None:
        source = StubSource()
        listed = search_all(source, neighbour_weights=[0.5, 0.25])
        assert listed.neighbour_weights == (0.5, 0.25)
        Agent('test', capabilities=[listed, search_all(source)])
        with pytest.raises(UserError, match=r"disagree on 'neighbour_weights'"):
            Agent('test', capabilities=[search_all(source, neighbour_weights=()), search_all(source)])

    def test_unset_scope_agrees_with_conversation(self) -> None:
        source = StubSource()
        with pytest.warns(DurableRecallDeprecationWarning):
            unset = ConversationSearch(source)
        Agent('test', capabilities=[unset, ConversationSearch(source, scope='conversation')])

    def test_disagreement_names_fields_not_values(self) -> None:
        source = StubSource()
        with pytest.raises(UserError, match=r"disagree on 'scope', 'max_matches'") as raised:
            Agent(
                'test',
                capabilities=[
                    ConversationSearch(source, scope='all', max_matches=3),
                    ConversationSearch(source, scope='conversation', max_matches=4),
                ],
            )
        assert '3' not in str(raised.value).split('disagree')[1]


class TestThroughAnAgent:
    async def test_the_model_calls_the_tool_and_reads_the_answer(self) -> None:
        source = StubSource()
        source.add('old', [user('the deploy key lives in vault/prod/DEPLOY_KEY_7731'), reply('ok')])
        seen: list[str] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            returns = [p for m in messages for p in getattr(m, 'parts', []) if isinstance(p, ToolReturnPart)]
            if not returns:
                return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': 'deploy key'})])
            seen.append(str(returns[0].content))
            return ModelResponse(parts=[TextPart('found it')])

        agent = Agent(FunctionModel(model), capabilities=[ConversationSearch(source, scope='conversation')])
        result = await agent.run('where is the deploy key?', conversation_id='c1')
        assert result.output == 'found it'
        assert 'vault/prod/DEPLOY_KEY_7731' in seen[0]


class TestReuse:
    async def test_repeated_searches_index_each_record_version_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from durable_recall.index import Indexer

        built: list[str] = []
        original = Indexer._prepare

        async def counting(self: Indexer, run: Any, row: Any, held: Any) -> Any:
            built.append(run.run_id)
            return await original(self, run, row, held)

        monkeypatch.setattr(Indexer, '_prepare', counting)
        source = six_messages()
        tool = search_all(source)
        await tool.search(context(), request('alpha'))
        await tool.search(context(), request('beta'))
        assert sorted(built) == ['r1', 'r2']
        source.versions['r2'] = 1  # a new snapshot of r2 was folded in
        await tool.search(context(), request('alpha'))
        assert sorted(built) == ['r1', 'r2', 'r2']

    def test_two_sources_over_one_store_combine(self) -> None:
        from durable_recall import InMemoryStepStore, SnapshotHistorySource

        store = InMemoryStepStore()
        Agent(
            'test',
            capabilities=[
                ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
                ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            ],
        )
        with pytest.raises(UserError, match="disagree on 'source'"):
            Agent(
                'test',
                capabilities=[
                    ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
                    ConversationSearch(SnapshotHistorySource(InMemoryStepStore()), scope='conversation'),
                ],
            )


class TestAnySource:
    """A source other than the store's: the engine indexes its records in memory, following their versions."""

    async def test_a_replaced_message_is_found_by_its_new_words_only(self) -> None:
        source = StubSource()
        source.add('r1', [user('the key is in vault/alpha'), reply('noted')])
        tool = search_all(source, context_lines=0)
        assert 'vault/alpha' in await tool.search(context(), request('alpha'))
        source.runs[0][1][0] = user('the key moved to vault/omega')
        source.versions['r1'] = 1
        assert (await tool.search(context(), request('alpha'))).startswith('No matches')
        found = await tool.search(context(), request('omega'))
        assert found.startswith('1 match') and 'vault/omega' in found

    async def test_a_run_that_left_the_source_is_no_longer_searched(self) -> None:
        source = StubSource()
        source.add('r1', [user('zebra one')])
        source.add('r2', [user('zebra two')])
        tool = search_all(source)
        assert (await tool.search(context(), request('zebra'))).startswith('2 matches')
        del source.runs[0]
        answer = await tool.search(context(), request('zebra'))
        assert answer.startswith('1 match') and 'zebra two' in answer and 'zebra one' not in answer

    async def test_a_corrupt_run_keeps_what_was_indexed_and_is_named(self) -> None:
        source = StubSource()
        source.add('r1', [user('zebra one')])
        source.add('r2', [user('zebra two')])
        tool = search_all(source)
        await tool.search(context(), request('zebra'))
        source.corrupt.add('r1')
        answer = await tool.search(context(), request('zebra'))
        assert answer.startswith('2 matches')
        assert "run 'r1', snapshot 3 (log ranges are not JSON)" in answer
