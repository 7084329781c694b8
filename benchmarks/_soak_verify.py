"""The soak's correctness checks: every turn stored once and in order, and `durable-recall check` passes.

Run on a pass's schema after its workflows completed (and after a worker was killed half-way): a
lost or duplicated message, a run stored twice, or a damaged index would make a fast soak wrong.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolCallPart, ToolReturnPart, UserPromptPart

from benchmarks._measure import ROOT
from durable_recall import PostgresStepStore, SnapshotHistorySource

__all__ = ('verify_soak',)


async def verify_soak(url: str, schema: str, conversations: Sequence[str], turns: int) -> list[str]:
    """What is wrong with the stored soak (an empty list when nothing is)."""
    problems: list[str] = []
    store = PostgresStepStore(url, schema=schema)
    try:
        source = SnapshotHistorySource(store)
        for conversation_id in conversations:
            runs = await source.list_runs(conversation_id=conversation_id)
            if len(runs) != turns:
                problems.append(f'{conversation_id}: {len(runs)} runs stored, expected {turns}')
                continue
            for turn, run in enumerate(runs, start=1):
                problem = await _turn_problem(source, run.run_id, turn)
                if problem:
                    problems.append(f'{conversation_id}, turn {turn}: {problem}')
    finally:
        await store.aclose()
    check = subprocess.run(
        [sys.executable, '-m', 'durable_recall', 'check', '--store', url, '--schema', schema],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        problems.append(f'durable-recall check failed: {check.stdout.strip()[-500:]} {check.stderr.strip()[-500:]}')
    return problems


async def _turn_problem(source: SnapshotHistorySource, run_id: str, turn: int) -> str | None:
    """What is wrong with one turn's run: its record must end on its own prompt, each earlier prompt once, in order.

    The record holds what the run sent and received after compaction (the sliding window drops
    middle turns), so earlier turns may be missing from it; none may be there twice or out of order.
    """
    record = await source.run_history(run_id)
    if record is None:
        return 'its run has no record'
    # A message that says who it is (a prompt, a tool call or return) must be there once. Plain
    # replies may repeat word for word (the soak's model says the same when its window shows the
    # same prompt), so their equal hashes prove nothing.
    marked = [h for h, message in zip(record.hashes, record.messages, strict=True) if _identified(message)]
    if len(set(marked)) != len(marked):
        return 'a message is stored twice'
    calls = [p.tool_call_id for m in record.messages for p in m.parts if isinstance(p, ToolCallPart)]
    returns = [p.tool_call_id for m in record.messages for p in m.parts if isinstance(p, ToolReturnPart)]
    if len(set(calls)) != len(calls) or len(set(returns)) != len(returns):
        return 'a tool call or return is stored twice'
    numbers = [
        int(str(part.content).split()[2])
        for message in record.messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]
    if not numbers or numbers[-1] != turn or numbers != sorted(set(numbers)):
        return f'its record holds the prompts of turns {numbers}'
    return None


def _identified(message: ModelMessage) -> bool:
    return any(isinstance(part, UserPromptPart | ToolCallPart | ToolReturnPart) for part in message.parts)
