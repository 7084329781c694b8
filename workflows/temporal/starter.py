"""Start one conversation and print it: `python -m workflows.temporal.starter [--model provider:name]`.

Needs a running worker (`python -m workflows.temporal.worker`) on the same Temporal server
(`TEMPORAL_ADDRESS`, default `localhost:7233`).
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Sequence

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client

from workflows.conversation import TURNS
from workflows.temporal import TASK_QUEUE, WORKFLOW_NAME, ConversationInput, ConversationResult, temporal_address


async def main(
    client: Client | None = None,
    *,
    conversation_id: str | None = None,
    model: str | None = None,
    continue_as_new_every: int | None = None,
    task_queue: str = TASK_QUEUE,
) -> ConversationResult:
    """Run the sample conversation to the end, print it, and return it."""
    if client is None:
        client = await Client.connect(temporal_address(), plugins=[PydanticAIPlugin()])
    conversation_id = conversation_id or f'sample-{uuid.uuid4().hex[:12]}'
    result = await client.execute_workflow(
        WORKFLOW_NAME,
        ConversationInput(
            conversation_id=conversation_id,
            turns=list(TURNS),
            model=model,
            continue_as_new_every=continue_as_new_every,
        ),
        id=f'conversation-{conversation_id}',
        task_queue=task_queue,
        result_type=ConversationResult,
    )
    print(f'conversation {result.conversation_id}:\n')
    for turn in result.transcript:
        print(f'user:      {turn.prompt}\nassistant: {turn.reply}\n')
    return result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Start the durable-recall sample conversation.')
    parser.add_argument('--model', metavar='PROVIDER:NAME', help='a real model, e.g. openai:gpt-5 (default: scripted)')
    parser.add_argument('--conversation-id', help='the conversation id (default: a new one)')
    parser.add_argument(
        '--continue-as-new-every', type=int, metavar='N', help='continue the workflow as new every N turns'
    )
    return parser.parse_args(argv)


if __name__ == '__main__':
    arguments = parse_args()
    asyncio.run(
        main(
            conversation_id=arguments.conversation_id,
            model=arguments.model,
            continue_as_new_every=arguments.continue_as_new_every,
        )
    )
