"""AutoRecall on LoCoMo: the share of evidence turns in the model's view without a tool call, and the bytes added.

Each question is taken as the next prompt after the whole chat. The model's view is the last 20
messages (the sliding window) and the part `AutoRecall` adds for the prompt; an evidence turn is in
view when the first 60 characters of its text are in either. Measured per `max_bytes`.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage

from benchmarks._locomo import LocomoChat, Side, recalled
from durable_recall import AutoRecall, SnapshotHistorySource, SqliteStepStore, update_index

__all__ = ('auto_recall',)

WINDOW = 20
BUDGETS = (2500, 4000)


async def auto_recall(chat: LocomoChat, path: Path, sides: dict[str, Side]) -> None:
    """Add AutoRecall's rows for one chat to `sides` (bytes: the part's content)."""
    store = SqliteStepStore(database=path)
    try:
        await update_index(store)
        texts = [text for exchange in chat.exchanges for text in (exchange.prompt, exchange.reply)]
        window = texts[-WINDOW:]
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=chat.conversation_id)
        only_window = sides.setdefault('window alone (20 messages)', Side('window alone (20 messages)'))
        for question in chat.questions:
            only_window.evidence += len(question.evidence)
            only_window.at10 += recalled('\n'.join(window), question.evidence)
            only_window.answer_bytes.append(0)
        for budget in BUDGETS:
            label = f'AutoRecall, max_bytes={budget:,}: window + part'
            side = sides.setdefault(label, Side(label))
            recall = AutoRecall(SnapshotHistorySource(store), max_bytes=budget)
            for question in chat.questions:
                text = await recall.recall(ctx, question.text, [*window, question.text])
                side.evidence += len(question.evidence)
                side.at10 += recalled('\n'.join([*window, text]), question.evidence)
                side.answer_bytes.append(len(text.encode()))
    finally:
        await store.aclose()


def describe(side: Side) -> str:
    """A row: evidence in view, mean bytes added, how often nothing was added."""
    empty = sum(1 for size in side.answer_bytes if size == 0)
    mean = statistics.mean(side.answer_bytes) if side.answer_bytes else 0
    return f'| {side.label} | {side.at10 / max(side.evidence, 1):.3f} | {mean:,.0f} | {empty} |'
