"""Run ids never collide across conversations, and a store error inside a search is an answer.

A conversation may be named anything, `B#branch:<tip>` included, which was the run id of `B`'s
branch: the two collided (on SQLite the second to be indexed raised on every search). Such ids are
now written percent-encoded after a `#`; an index written with the old ids is registered again.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore

from durable_recall.conversations import ConversationStoreSource
from durable_recall.conversations._source import branch_run_id, conversation_of, live_run_id
from durable_recall.search import SearchRequest
from tests.security.test_reused_ids import engine_over

from ._helpers import echo_agent
from .conftest import ConversationKit

pytestmark = pytest.mark.anyio

IDS = st.lists(st.sampled_from(['#', 'branch:', '%', '23', '3A', 'b', 'é', '\x00', '\ud800', ' ']), max_size=8).map(
    ''.join
)


@given(first=IDS, second=IDS, tip=IDS, other_tip=IDS)
def test_run_ids_name_one_conversation_each(first: str, second: str, tip: str, other_tip: str) -> None:
    tip, other_tip = 'e' + tip, 'e' + other_tip  # entry ids are never empty
    for cid in (first, second):
        assert conversation_of(live_run_id(cid)) == cid
        assert conversation_of(branch_run_id(cid, tip)) == cid
        assert live_run_id(cid) != branch_run_id(cid, tip)
    if first != second:
        ids = {live_run_id(first), branch_run_id(first, tip), live_run_id(second), branch_run_id(second, other_tip)}
        assert len(ids) == 4


def test_plain_ids_keep_their_run_ids() -> None:
    assert live_run_id('support-1') == 'support-1'
    assert branch_run_id('support-1', 'e1') == 'support-1#branch:e1'
    assert live_run_id('B#branch:e1') == '#B%23branch%3Ae1'
    assert live_run_id('#x') == '#%23x'


async def _victim_and_squatter(store: ConversationStore) -> str:
    """`B` with a branch holding ZEBRA-VICTIM, and a conversation named like that branch's run id."""
    agent = echo_agent()
    await store.save(await agent.run('alpha', conversation=Conversation(conversation_id='B')))
    loaded = await store.load('B')
    assert loaded is not None
    await store.save(await agent.run('bravo', conversation=loaded))
    record = await store.read_record('B')
    assert record is not None
    branched = await store.branch('B', at=2, expected_revision=record.revision)
    await store.save(await agent.run('victim secret zebra', conversation=branched))
    record = await store.read_record('B')
    assert record is not None and record.branches
    squatter = f'B#branch:{record.branches[0]}'
    await store.save(await agent.run('squatter says zebra', conversation=Conversation(conversation_id=squatter)))
    return squatter


async def _check_apart(store: ConversationStore, squatter: str) -> None:
    search = engine_over(ConversationStoreSource(store))
    for _ in range(2):  # the second time from what the first indexed
        for scope in ('conversation', 'all'):
            mine = await search.search(SearchRequest(query='zebra'), scope='conversation', conversation_id='B')
            theirs = await search.search(SearchRequest(query='zebra'), scope='conversation', conversation_id=squatter)
            everyone = await search.search(SearchRequest(query='zebra'), scope=scope, conversation_id='B')
            assert 'victim secret zebra' in mine and 'squatter' not in mine, mine
            assert 'squatter says zebra' in theirs and 'victim' not in theirs, theirs
            assert 'victim secret zebra' in everyone and ('squatter says zebra' in everyone or scope != 'all')


async def test_a_conversation_named_like_a_branch_stays_apart(conversation_store: ConversationStore) -> None:
    squatter = await _victim_and_squatter(conversation_store)
    await _check_apart(conversation_store, squatter)


async def test_an_index_written_with_the_old_run_ids_is_registered_again(
    sql_conversation_kit: ConversationKit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sql_conversation_kit.store
    agent = echo_agent()
    await store.save(await agent.run('early zebra', conversation=Conversation(conversation_id='#hash')))
    squatter = await _victim_and_squatter(store)
    with monkeypatch.context() as old:  # index as the format before escaping did: the squatter first
        old.setattr(ConversationStoreSource, 'live_run_id', staticmethod(lambda cid: cid))
        old.setattr(ConversationStoreSource, 'branch_run_id', staticmethod(lambda cid, tip: f'{cid}#branch:{tip}'))
        search = engine_over(ConversationStoreSource(store))
        for cid in (squatter, '#hash'):
            answer = await search.search(SearchRequest(query='zebra'), scope='conversation', conversation_id=cid)
            assert 'zebra' in answer
    held = await sql_conversation_kit.query('SELECT run_id FROM {runs} ORDER BY run_id')
    assert (squatter,) in held and ('#hash',) in held  # the old ids, as an existing store holds them

    await _check_apart(store, squatter)
    answer = await engine_over(ConversationStoreSource(store)).search(
        SearchRequest(query='zebra'), scope='conversation', conversation_id='#hash'
    )
    assert 'early zebra' in answer
    held = await sql_conversation_kit.query('SELECT run_id, conversation_id FROM {runs} ORDER BY run_id')
    assert (squatter, squatter) not in held and ('#hash', '#hash') not in held, held
    assert (live_run_id(squatter), squatter) in held and ('#%23hash', '#hash') in held, held


async def test_a_store_error_inside_a_search_is_an_answer(conversation_kit: ConversationKit) -> None:
    store = conversation_kit.store
    agent = echo_agent()
    await store.save(await agent.run('other tenant zebra', conversation=Conversation(conversation_id='other')))
    search = engine_over(ConversationStoreSource(store))
    for cid in ('with\x00nul', 'lone \ud800 surrogate', "quote ' ; DROP TABLE x; --"):
        for scope in ('conversation', 'all'):
            answer = await search.search(SearchRequest(query='zebra'), scope=scope, conversation_id=cid)
            assert isinstance(answer, str) and answer
            if scope == 'conversation':
                assert 'other tenant' not in answer
    answer = await search.search(SearchRequest(query='zebra'), scope='conversation', conversation_id='other')
    assert 'other tenant zebra' in answer  # the store still works after the failures
