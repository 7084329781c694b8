"""Capability parts (pydantic-ai 2.78) and part kinds from a later release, end to end on every store.

A capability's data is persisted once, indexed by what the model was shown, labelled by its source
and kind in answers, and filterable as the `capability` role. Request-scoped instructions, parts of
our own namespace (recall excerpts) and the search tool's results are not indexed: no self-echo.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from .._capability_parts import HAS_CAPABILITY_PARTS, NEEDS_CAPABILITY_PARTS

if not HAS_CAPABILITY_PARTS:
    pytest.skip(NEEDS_CAPABILITY_PARTS, allow_module_level=True)

from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    OperatorSource,
    TextPart,
    ToolCallPart,
    ToolResultSource,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence
from durable_recall.base import SnapshotDelta, dump_messages

from .._capability_parts import JobReportPart, NoteToModelPart, OwnRecallPart
from .._services.stores import StoreKit
from ..stores._helpers import registration

pytestmark = pytest.mark.anyio


@dataclass
class Jobs(AbstractCapability[Any]):
    """On a `jobs` run: a job report, a request-scoped note, our own recall excerpt and an echoed search."""

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if ctx.run_step == 1 and ctx.prompt == 'jobs':
            ctx.enqueue(
                JobReportPart(
                    content='backup wrote QUAGGA-7731', job='nightly', source=ToolResultSource(tool_name='backup')
                ),
                NoteToModelPart(content='Only now: EPHEMERAL-QQ.', source=OperatorSource(), scope='request'),
                OwnRecallPart(content='recalled earlier: ECHOED-QQ', source=OperatorSource()),
                JobReportPart(
                    content='search said RESEARCHED-QQ',
                    source=ToolResultSource(tool_name='search_conversation_history'),
                ),
            )
        return request_context


ANSWERS: list[str] = []
"""The search tool's answers, in order (kept out of the history: quoted, they would be indexed)."""


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart):
            ANSWERS.append(str(part.content))
            return ModelResponse(parts=[TextPart('found it')])
    prompts = [part.content for part in last.parts if isinstance(part, UserPromptPart)]
    prompt = str(prompts[-1]) if prompts else ''
    if prompt.startswith('search '):  # hex, so that the prompt itself never matches the query
        arguments = json.loads(bytes.fromhex(prompt[7:]))
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', arguments)])
    return ModelResponse(parts=[TextPart('noted')])


def agent(kit: StoreKit) -> Agent[None, str]:
    return Agent(
        FunctionModel(reply),
        capabilities=[
            StepPersistence(kit.store),
            ConversationSearch(SnapshotHistorySource(kit.store), scope='conversation'),
            Jobs(),
        ],
    )


async def search(recall: Agent[None, str], history: list[ModelMessage], **args: Any) -> str:
    prompt = f'search {json.dumps(args).encode().hex()}'
    await recall.run(prompt, message_history=history, conversation_id='ops')
    return ANSWERS[-1]


async def test_a_capability_part_is_recalled_by_its_content_and_labelled_by_its_source(kit: StoreKit) -> None:
    recall = agent(kit)
    first = await recall.run('jobs', conversation_id='ops')
    history = first.all_messages()

    answer = await search(recall, history, query='QUAGGA-7731')
    assert '>[1] Data [jobs.job_report, tool backup]: nightly\nbackup wrote QUAGGA-7731' in answer, answer
    assert 'QUAGGA' in await search(recall, history, query='QUAGGA', roles=['capability'])
    assert (await search(recall, history, query='QUAGGA', roles=['user'])).startswith('No matches')

    # Not standing content, or an echo of what the record already holds: never found.
    for token in ('EPHEMERAL-QQ', 'ECHOED-QQ', 'RESEARCHED-QQ'):
        assert (await search(recall, history, query=token)).startswith('No matches'), token


FUTURE_BODIES = [
    '{"parts":[{"content":"look at this","timestamp":"2026-01-01T00:00:00Z","part_kind":"user-prompt"},'
    '{"content":"a hologram of the ZEBRA-404 rack","id":"holo-1","part_kind":"hologram"}],'
    '"timestamp":null,"instructions":null,"kind":"request","run_id":null,"conversation_id":null,'
    '"metadata":null,"state":"complete"}',
    '{"parts":[{"caption":"stripes, mostly","part_kind":"hologram-response"}],"usage":{},"model_name":"m",'
    '"timestamp":"2026-01-01T00:00:01Z","kind":"response","finish_reason":null}',
]
"""A run written by a later pydantic-ai, whose part kinds the installed one does not define."""


async def save_future_run(kit: StoreKit) -> None:
    await kit.store.register_run(registration('future-run', conversation_id='ops'))
    delta = SnapshotDelta(
        run_id='future-run',
        index=0,
        step_index=0,
        state='complete',
        segments=[(-1, len(FUTURE_BODIES))],
        messages=FUTURE_BODIES,
    )
    assert await kit.store.save_snapshot(delta)


async def test_a_part_kind_from_a_later_release_is_recorded_indexed_and_shown(kit: StoreKit) -> None:
    await save_future_run(kit)
    [snapshot] = await kit.store.list_snapshots('future-run')
    assert dump_messages(snapshot.messages)[0] == FUTURE_BODIES[0]  # verbatim

    recall = agent(kit)
    answer = await search(recall, [], query='ZEBRA-404')
    assert '>[0] User: look at this\n     Part [hologram]: a hologram of the ZEBRA-404 rack' in answer, answer
    assert ' [1] Part [hologram-response]: stripes, mostly' in answer, answer


async def test_check_passes_on_a_store_with_capability_parts_and_later_kinds(kit: StoreKit) -> None:
    if kit.sqlite_path is None:
        pytest.skip('the command line reads SQLite and Postgres stores; this one is SQLite')
    await save_future_run(kit)
    recall = agent(kit)
    first = await recall.run('jobs', conversation_id='ops')
    assert 'QUAGGA' in await search(recall, first.all_messages(), query='QUAGGA')
    assert 'ZEBRA' in await search(recall, first.all_messages(), query='ZEBRA')
    result = subprocess.run(
        [sys.executable, '-W', 'error', '-m', 'durable_recall', 'check', '--store', str(kit.sqlite_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_capability_part_carrying_a_hidden_tools_result_is_withheld_on_both_paths() -> None:
    from durable_recall.text import display_lines
    from durable_recall.text._stored import prepare_stored, stored_lines
    from durable_recall.text._visibility import WITHHELD, SkipTools

    part = JobReportPart(content='token is SECRET-ZZ', source=ToolResultSource(tool_name='fetch_token'))
    message = ModelRequest(parts=[UserPromptPart('check'), part])
    hidden = SkipTools({'search_conversation_history'}, by_name={'fetch_token': 'private'})
    expected = ['User: check', WITHHELD]
    assert display_lines(message, {'secret'}, skip_tools=hidden) == expected
    [body] = dump_messages([message])
    prepared = prepare_stored(body)
    assert prepared is not None
    assert stored_lines(prepared, {'secret'}, skip_tools=hidden) == expected
    # Public by default: only the application's `hidden_tools` can name such a part's tool.
    assert display_lines(message, {'secret'}, skip_tools=SkipTools())[1].startswith('Data [jobs.job_report')
