"""A 7-run conversation for the durable search tests: a detail seen in run 1, dropped, recalled in run 7.

The scripted model is deterministic (its replies depend only on the messages), which replay needs:
in run 7 it calls the search and then quotes the tool's whole answer, so the workflow's result
carries exactly what the search returned.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    StepPersistence,
    StepStore,
)

DETAIL = 'the ledger export lives at s3://acme-ZEBRA-exports/2026/ledger.parquet'
TURNS = [
    f'remember this: {DETAIL}',
    'what is a parquet file?',
    'and what about avro?',
    'compare both briefly',
    'which one compresses better?',
    'thanks, noted',
    'recall: ledger export ZEBRA',
]
SEARCH_CALLS: list[str] = []
"""One entry per search tool body execution (query), to count re-executions."""


def recall_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f'QUOTE<<{part.content}>>')])
    prompt = str(last.parts[-1].content) if last.parts else ''  # pyright: ignore[reportAttributeAccessIssue]
    if prompt.startswith('recall:'):
        return ModelResponse(
            parts=[ToolCallPart('search_conversation_history', {'query': prompt.removeprefix('recall:').strip()})]
        )
    return ModelResponse(parts=[TextPart(f'answer to: {prompt[:60]} ' + 'filler ' * 30)])


def recall_capabilities(store: StepStore) -> list[Any]:
    return [
        StepPersistence(store=store),
        ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
        SlidingWindowCompaction(max_messages=6),
    ]


def recall_model() -> FunctionModel:
    return FunctionModel(recall_reply, model_name='recall-script')


async def converse(agent: Agent[None, str], conversation_id: str, turns: list[str] = TURNS) -> list[str]:
    history: list[ModelMessage] | None = None
    outputs: list[str] = []
    for prompt in turns:
        result = await agent.run(prompt, message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
        outputs.append(result.output)
    return outputs


def quoted_search(outputs: list[str]) -> str:
    """The search answer the model quoted in run 7, run ids (which name the workflow) and times masked.

    Two executions compared minutes apart show different times in the blocks' dates; nothing else
    may differ.
    """
    match = re.search(r'QUOTE<<(.*)>>', outputs[-1], re.DOTALL)
    assert match is not None, outputs[-1]
    quoted = re.sub(r'run: \S+', 'run: <id>', match.group(1))
    return re.sub(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC', '<time>', quoted)
