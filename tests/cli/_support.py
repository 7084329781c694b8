"""Shared pieces of the CLI tests: a store populated by real agents, and a way to run the CLI in process."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    StepPersistence,
    StepStore,
)
from durable_recall.cli import main
from durable_recall.cli._agent import build_agent
from durable_recall.cli._script import DETAIL, prompts, scripted_model
from durable_recall.stores import RunRegistration

SUPPORT = 'ticket-42'
"""The demo's support conversation: the detail in run 1, compaction, the recall in the last run."""

OTHER = 'ticket-99'
"""Another customer's conversation, holding a word of its own."""

OTHER_SECRET = 'the ZEBRA vault code is 7731'

ORPHAN = 'orphan-run'
"""A run registered without a conversation id, and never snapshotted."""

__all__ = (
    'DETAIL',
    'ORPHAN',
    'OTHER',
    'OTHER_SECRET',
    'SUPPORT',
    'as_shown_by_cli',
    'CliRun',
    'Populated',
    'populate',
    'populate_sync',
    'run_cli',
)


@dataclass(frozen=True)
class Populated:
    """What `populate` wrote, by conversation."""

    runs: dict[str, list[str]]
    solo: tuple[str, str]
    """A run started without a conversation id: `(the conversation id core gave it, its run id)`."""
    store: str = ''
    """How the CLI names the store (`--store`)."""

    @property
    def support_runs(self) -> list[str]:
        return self.runs[SUPPORT]


def _echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    prompt = next(part.content for part in reversed(last.parts) if isinstance(part, UserPromptPart))
    return ModelResponse(parts=[TextPart(f'noted: {prompt}')])


async def populate(store: StepStore) -> Populated:
    """Run real agents with StepPersistence on `store`: the demo's conversation, another one, and a loose run."""
    support = build_agent(scripted_model(), store, None)
    history: list[ModelMessage] | None = None
    runs: dict[str, list[str]] = {SUPPORT: [], OTHER: []}
    outputs: list[str] = []
    for prompt in prompts(6):
        result = await support.run(prompt, message_history=history, conversation_id=SUPPORT)
        history = result.all_messages()
        runs[SUPPORT].append(result.run_id)
        outputs.append(result.output)
    assert DETAIL in outputs[-1]  # the scripted model searched and quoted it

    other = Agent(
        FunctionModel(_echo, model_name='echo'),
        name='other_agent',
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            SlidingWindowCompaction(max_messages=4),
        ],
    )
    history = None
    for prompt in (f'remember: {OTHER_SECRET}', 'and the billing export is fine here'):
        result = await other.run(prompt, message_history=history, conversation_id=OTHER)
        history = result.all_messages()
        runs[OTHER].append(result.run_id)
    solo = await other.run('a run without a conversation')
    assert solo.conversation_id is not None  # core gives every run one
    # Another writer may register a run without one; it has no snapshots yet either.
    await store.register_run(RunRegistration(run_id=ORPHAN, conversation_id=None, token='orphan-token'))
    return Populated(runs=runs, solo=(solo.conversation_id, solo.run_id))


def populate_sync(store: StepStore) -> Populated:
    async def go() -> Populated:
        try:
            return await populate(store)
        finally:
            await store.aclose()

    return asyncio.run(go())


_TOOL_HEADER = re.compile(r'(\d+) (?:match|matches) for (.*) in (\d+) persisted messages?:')


def as_shown_by_cli(tool_text: str, cli_text: str) -> str:
    """The tool's answer with its header as the CLI writes it: `N of M matches` (M from the CLI's own header).

    The CLI counts every matching message apart from windows and the budget; the tool's header counts
    the blocks it shows. Everything after the header is the same text.
    """
    head, newline, rest = tool_text.partition('\n')
    found = _TOOL_HEADER.fullmatch(head)
    if found is None:
        return tool_text
    shown, query, total = found.groups()
    cli_head = re.fullmatch(
        rf'{shown} of (\d+) (match|matches) for (.*) in {total} (persisted messages?):', cli_text.partition('\n')[0]
    )
    assert cli_head is not None, cli_text.partition('\n')[0]
    assert cli_head.group(3) == query and int(cli_head.group(1)) >= int(shown)
    head = f'{shown} of {cli_head.group(1)} {cli_head.group(2)} for {query} in {total} {cli_head.group(4)}:'
    return head + newline + rest


@dataclass(frozen=True)
class CliRun:
    status: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], args: Sequence[str]) -> CliRun:
    """`main(args)` in this process, with what it wrote to stdout and stderr."""
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return CliRun(status, captured.out, captured.err)
