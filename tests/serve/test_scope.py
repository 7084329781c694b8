"""A server for one conversation never returns another's content, nor tells whether another exists (fuzzed)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from durable_recall import SqliteStepStore
from durable_recall.cli._mcp import build_mcp_server
from durable_recall.cli._serve_scope import ServeScope
from tests.cli._support import ORPHAN, OTHER, SUPPORT, Populated

LEAKS = ('vault code is', 'ZEBRA vault', 'billing export is fine here', 'a run without a conversation')
"""Phrases only the other conversation (and the loose runs) hold."""

WORDS = ['ZEBRA', 'vault', 'code', '7731', 'billing', 'export', 's3', 'fine', 'here', 'noted', 'remember', 'run']


@pytest.fixture(scope='module')
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope='module')
def scoped(served_store: Populated, loop: asyncio.AbstractEventLoop) -> Iterator[tuple[Any, Populated]]:
    store = SqliteStepStore(served_store.store)
    yield build_mcp_server(store, ServeScope(frozenset({SUPPORT}))), served_store
    loop.run_until_complete(store.aclose())


def _foreign_ids(populated: Populated) -> list[str]:
    return [*populated.runs[OTHER], populated.solo[1], ORPHAN, OTHER, populated.solo[0]]


def _calls(populated: Populated) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    ids = st.one_of(st.sampled_from(_foreign_ids(populated)), st.text(max_size=40))
    query = st.one_of(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(' '.join), st.text(max_size=60))
    maybe_id = st.one_of(st.none(), ids)
    search = st.fixed_dictionaries(
        {'query': query},
        optional={
            'conversation_id': maybe_id,
            'run_id': maybe_id,
            'roles': st.lists(st.sampled_from(['user', 'assistant', 'tool', 'summary', 'nobody']), max_size=3),
            'order': st.sampled_from(['relevance', 'newest', 'oldest', 'sideways']),
            'since': st.sampled_from(['2000-01-01T00:00:00Z', 'yesterday', '']),
        },
    )
    page = {'offset': st.integers(-5, 500), 'limit': st.integers(-1, 300)}
    return st.one_of(
        st.tuples(st.just('search'), search),
        st.tuples(st.just('show_run'), st.fixed_dictionaries({'run_id': ids}, optional=page)),
        st.tuples(st.just('show_conversation'), st.fixed_dictionaries({'conversation_id': ids}, optional=page)),
        st.tuples(st.just('list_conversations'), st.just({})),
    )


def _answer(server: Any, loop: asyncio.AbstractEventLoop, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async def go() -> tuple[bool, str]:
        async with Client(server) as client:
            result = await client.call_tool(name, arguments)
        text = '\n'.join(getattr(part, 'text', '') for part in result.content)
        return bool(result.is_error), text

    return loop.run_until_complete(go())


def test_a_scoped_server_never_shows_another_conversation(
    scoped: tuple[Any, Populated], loop: asyncio.AbstractEventLoop
) -> None:
    server, populated = scoped
    foreign = _foreign_ids(populated)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(call=_calls(populated))
    def check(call: tuple[str, dict[str, Any]]) -> None:
        name, arguments = call
        failed, text = _answer(server, loop, name, arguments)
        given_text = repr(arguments)
        for phrase in LEAKS:
            assert phrase not in text or phrase in given_text, (name, arguments, text)
        for ident in foreign:
            assert ident not in text or ident in given_text, (name, arguments, text)
        if not failed:  # a type the schema refuses is the SDK's error result; every value we take is answered
            assert text.strip()

    check()


def test_an_id_out_of_scope_is_answered_as_one_that_does_not_exist(
    scoped: tuple[Any, Populated], loop: asyncio.AbstractEventLoop
) -> None:
    server, populated = scoped
    for ident in _foreign_ids(populated):
        for name, key in (('show_run', 'run_id'), ('show_conversation', 'conversation_id')):
            _, answer = _answer(server, loop, name, {key: ident})
            _, missing = _answer(server, loop, name, {key: 'no-such-id-ZEBRA'})
            assert answer.replace(ident, '<id>') == missing.replace('no-such-id-ZEBRA', '<id>')
        _, answer = _answer(server, loop, 'search', {'query': 'billing', 'run_id': ident})
        _, missing = _answer(server, loop, 'search', {'query': 'billing', 'run_id': 'no-such-id-ZEBRA'})
        assert answer.replace(ident, '<id>') == missing.replace('no-such-id-ZEBRA', '<id>')
        _, answer = _answer(server, loop, 'search', {'query': 'billing', 'conversation_id': ident})
        _, missing = _answer(server, loop, 'search', {'query': 'billing', 'conversation_id': 'no-such-id-ZEBRA'})
        assert answer.replace(ident, '<id>') == missing.replace('no-such-id-ZEBRA', '<id>')


def test_an_all_server_does_show_the_other_conversation(
    served_store: Populated, loop: asyncio.AbstractEventLoop
) -> None:
    """The control: the fuzz's leak phrases are findable, so their absence above means something."""
    store = SqliteStepStore(served_store.store)
    try:
        server = build_mcp_server(store, ServeScope(None))
        _, text = _answer(server, loop, 'search', {'query': 'ZEBRA vault'})
        assert 'vault code is' in text
        _, listed = _answer(server, loop, 'list_conversations', {})
        assert OTHER in listed and SUPPORT in listed
    finally:
        loop.run_until_complete(store.aclose())
