"""A 7-run conversation for the durable AutoRecall tests: a detail said in run 1, dropped, recalled for run 7's prompt.

The model is deterministic (its replies depend only on the messages), which replay needs: in every
run it quotes the recall part it was sent, if any, so the workflow's result carries exactly what
the recall added.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import AutoRecall, SlidingWindowCompaction, SnapshotHistorySource, StepPersistence, StepStore

DETAIL = 'the ledger export lives at s3://acme-ZEBRA-exports/2026/ledger.parquet'
TURNS = [
    f'remember this: {DETAIL}',
    'what is a parquet file?',
    'and what about avro?',
    'compare both briefly',
    'which one compresses better?',
    'thanks, noted',
    'where does the ZEBRA ledger export live?',
]


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    texts = [str(getattr(part, 'content', '')) for part in last.parts]
    seen = [text for text in texts if '<recalled_history>' in text and 'accompanying' not in text]
    return ModelResponse(parts=[TextPart(f'SAW<<{"".join(seen)}>> ' + 'filler ' * 30)])


def auto_capabilities(store: StepStore) -> list[Any]:
    return [
        StepPersistence(store=store),
        SlidingWindowCompaction(max_messages=6, preserve_first_user_message=False),
        AutoRecall(SnapshotHistorySource(store)),
    ]


def auto_model() -> FunctionModel:
    return FunctionModel(reply, model_name='auto-recall-script')


async def converse(agent: Agent[None, str], conversation_id: str, turns: list[str] = TURNS) -> list[str]:
    history: list[ModelMessage] | None = None
    outputs: list[str] = []
    for prompt in turns:
        result = await agent.run(prompt, message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
        outputs.append(result.output)
    return outputs


def seen(output: str) -> str:
    """The recall part a run's model was sent, run ids and times masked (two executions run minutes apart)."""
    match = re.search(r'SAW<<(.*)>>', output, re.DOTALL)
    assert match is not None, output
    quoted = re.sub(r'run: [^ |)]+', 'run: <id>', match.group(1))
    quoted = re.sub(r'\n  \(\d\d:\d\d\)', '', quoted)
    quoted = re.sub(r' \| \d\d:\d\d\)', ')', quoted)
    return re.sub(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC', '<time>', quoted)
