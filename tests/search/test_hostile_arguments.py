"""Hostile tool arguments: whatever the model passes, the real tool answers with a string.

The arguments go through pydantic-ai's own tool call path (validation included) to
`search_conversation_history` over a SQLite and a Postgres store holding two conversations. Every
call must come back as a tool return (never a retry prompt, never an exception), within the
answer's byte budget, and without a word of the other conversation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence
from durable_recall.search import SearchRequest
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore

from ._stub import context

SECRET = 'zanzibarsecret'
"""A word only the other conversation holds; the model may ask for it, but no answer may show its message."""

OTHER_TEXT = 'the other tenant says'
"""The rest of that message, which no query asks for: an answer holding it leaked the other conversation."""

MAX_BYTES = 4096

_HUGE = st.sampled_from(['\ufdfa' * 350_000, 'zeta ' * 200_000, 'x' * 1_000_000, '\x00' * 10_000, '東京' * 100_000])


def _values(characters: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Any JSON value, strings drawn from `characters`, huge ones included."""
    text = st.text(characters, max_size=60)
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from([10**5000, -(10**30), 2**63, -1, 0]),
        st.floats(allow_nan=True, allow_infinity=True),
        text,
    )
    return st.one_of(
        scalars, st.lists(scalars, max_size=4), st.dictionaries(st.text(max_size=5), scalars, max_size=3), _HUGE
    )


def _times(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.datetimes(timezones=st.timezones()).map(lambda moment: moment.isoformat()),
        st.datetimes().map(lambda moment: moment.isoformat()),
        st.sampled_from(
            [
                '0001-01-01',
                '0001-01-01T00:00+23:59',
                '9999-12-31T23:59:59.999999-23:59',
                '9999-12-31',
                '99999-01-01',
                '+10000-01-01',
                '2026-02-30',
                '2026-01-31T24:00:00',
                '2026-01-31T09:30:00+24:00',
                '2026-W05-1',
                '20260131T093000Z',
                '2026-01-31\x00T09:30',
                'Z' * 100_000,
            ]
        ),
        values,
    )


def _roles(values: st.SearchStrategy[Any], text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(st.sampled_from(['user', 'assistant', 'tool', 'system']), max_size=5),
        st.lists(st.one_of(text, st.just('user')), max_size=5),
        st.just(['user'] * 100_000),
        st.just([str(number) for number in range(10_000)]),
        values,
    )


# Through pydantic-ai's tool path, strings carry no lone surrogates: its JSON handling refuses them
# before any tool runs (`FunctionModel` serializes the call, a provider's JSON parser rejects them).
_WIRE_CHARACTERS = st.characters(codec='utf-8')
_WIRE_VALUES = _values(_WIRE_CHARACTERS)
# Built in code, a request may hold anything a Python string can: surrogates, NUL, controls.
_ANY_CHARACTERS = st.characters(codec=None, exclude_categories=())
_ANY_VALUES = _values(_ANY_CHARACTERS)

_ARGUMENTS = st.fixed_dictionaries(
    {},
    optional={
        'query': st.one_of(st.sampled_from(['zeta', 'ledger parquet', SECRET]), _WIRE_VALUES),
        'run_id': st.one_of(st.sampled_from(['r-1', 'a\x00b', 'x' * 100_000, '']), _WIRE_VALUES),
        'roles': _roles(_WIRE_VALUES, st.text(_WIRE_CHARACTERS, max_size=20)),
        'since': _times(_WIRE_VALUES),
        'until': _times(_WIRE_VALUES),
        'order': st.one_of(st.sampled_from(['relevance', 'newest', 'oldest', 'NEWEST']), _WIRE_VALUES),
        'limit': _WIRE_VALUES,
        'context_lines': st.integers(),
        '\x00': _WIRE_VALUES,
    },
)


def _seed_agent(store: StepStore) -> Agent[None, str]:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('zeta noted, the ledger parquet export is kept')])

    return Agent(FunctionModel(reply), name='seed', capabilities=[StepPersistence(store=store)])


def _probe_agent(store: StepStore, arguments: dict[str, Any], seen: list[ToolReturnPart]) -> Agent[None, str]:
    """An agent whose model calls the tool with `arguments` once and records what came back.

    A validation failure would come back as a return with `outcome='retried'` (a retry prompt).
    """

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        if returned:
            seen.extend(returned)
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', arguments)])

    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation', max_result_bytes=MAX_BYTES)
    return Agent(FunctionModel(reply), name='probe', capabilities=[search])


async def _seed(store: StepStore) -> None:
    agent = _seed_agent(store)
    for number in range(3):
        await agent.run(f'turn {number}: zeta epsilon alpha ledger', conversation_id='c1')
    await agent.run(f'{OTHER_TEXT} {SECRET}', conversation_id='c-other')


def _check(answer: object) -> None:
    assert isinstance(answer, str) and answer
    assert len(answer.encode('utf-8', 'surrogatepass')) <= MAX_BYTES
    assert OTHER_TEXT not in answer and 'c-other' not in answer


def _store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> StepStore:
    if backend == 'sqlite':
        return SqliteStepStore(tmp_path / 'store.db')
    url: str = request.getfixturevalue('postgres_url')
    schema: str = request.getfixturevalue('postgres_schema')
    return PostgresStepStore(url, schema=schema)


_BACKENDS = ['sqlite', pytest.param('postgres', marks=pytest.mark.postgres)]


def _with_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest, body: Callable[..., None]) -> None:
    """Run `body(runner, store)` with a seeded store on one event loop (a Postgres pool belongs to one loop)."""
    store = _store(backend, tmp_path, request)
    with asyncio.Runner() as runner:
        runner.run(_seed(store))
        try:
            body(runner, store)
        finally:
            runner.run(store.aclose())


@pytest.mark.parametrize('backend', _BACKENDS)
def test_hostile_tool_calls_get_an_answer(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    def body(runner: asyncio.Runner, store: StepStore) -> None:
        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(arguments=_ARGUMENTS)
        def call(arguments: dict[str, Any]) -> None:
            seen: list[ToolReturnPart] = []
            runner.run(_probe_agent(store, arguments, seen).run('look it up', conversation_id='c1'))
            assert len(seen) == 1
            assert seen[0].outcome == 'success', seen[0]
            _check(seen[0].content)

        call()

    _with_store(backend, tmp_path, request, body)


@pytest.mark.parametrize('backend', _BACKENDS)
def test_requests_built_in_code_with_any_types_get_an_answer(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A `SearchRequest` decoded from an engine's payload, or built by hand, is not type-checked."""

    def body(runner: asyncio.Runner, store: StepStore) -> None:
        search = ConversationSearch(SnapshotHistorySource(store), scope='conversation', max_result_bytes=MAX_BYTES)

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            query=st.one_of(st.just('zeta'), _ANY_VALUES),
            run_id=st.one_of(st.none(), st.just('\ud800'), _ANY_VALUES),
            roles=_roles(_ANY_VALUES, st.text(_ANY_CHARACTERS, max_size=20)),
            since=st.one_of(st.none(), _times(_ANY_VALUES)),
            until=st.one_of(st.none(), _times(_ANY_VALUES)),
            order=st.one_of(st.just('relevance'), _ANY_VALUES),
        )
        def call(query: Any, run_id: Any, roles: Any, since: Any, until: Any, order: Any) -> None:
            hostile = SearchRequest(query=query, run_id=run_id, roles=roles, since=since, until=until, order=order)
            _check(runner.run(search.search(context('c1'), hostile)))

        call()

    _with_store(backend, tmp_path, request, body)


@pytest.mark.parametrize(
    ('arguments', 'expected'),
    [
        ({'query': 'zeta', 'run_id': 'a\x00b'}, "No persisted history for run 'a\\x00b'."),
        ({'query': 'zeta', 'limit': 10**9}, 'takes no argument'),
        ({'query': 'zeta', 'since': 1.5}, "since='1.5' is not an ISO-8601 time"),
        ({'query': 'zeta', 'roles': 'robot'}, "Unknown role(s) 'robot'"),
        ({'query': 'zeta', 'roles': ['user'] * 17}, '17 roles is more than there are'),
        ({'query': 'zeta', 'order': 3}, "Unknown order '3'"),
        ({'query': 'zeta', 'since': '0001-01-01T00:00+23:59'}, "for 'zeta' in"),
        ({'query': 'zeta', 'until': '9999-12-31T23:59:59-23:59'}, "for 'zeta' in"),
        ({'query': None}, 'has no searchable words'),
        ({}, 'has no searchable words'),
    ],
)
def test_hostile_arguments_are_explained(
    arguments: dict[str, Any], expected: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def body(runner: asyncio.Runner, store: StepStore) -> None:
        seen: list[ToolReturnPart] = []
        runner.run(_probe_agent(store, arguments, seen).run('look it up', conversation_id='c1'))
        assert seen[0].outcome == 'success', seen[0]
        assert expected in str(seen[0].content)

    _with_store('sqlite', tmp_path, request, body)
