"""Recall on real long conversations (LoCoMo): recall@10 and answer bytes per budget, and AutoRecall.

`python -m benchmarks.locomo --data ../shared/data/locomo-dev [--no-reference] [--no-hybrid] [--chats 26,30]`.

Each chat is played through the library as a chat app plays it (`benchmarks._recall._play`): one
`Agent.run` per exchange (two consecutive turns of a session: the first as the prompt, the second
as the reply), history threaded through `message_history`, `SlidingWindowCompaction(max_messages=20)`,
`StepPersistence` on a SQLite store, the session's date as the clock (a minute per exchange).
A turn's text is `Speaker: text` (a shared photo adds `[shares a photo: caption]`).

Every question but the adversarial ones (category 5, no answer in the chat) goes to
`search_conversation_history` (scope `'conversation'`). An evidence turn counts as recalled when
the first 60 characters of its text appear in the first 10 blocks of the answer. Reported per
side: recall@10, mean and max answer bytes, warm p50 (each question asked again, and questions a
warm process had not been asked: half are asked first, the other half timed). AutoRecall: the share of evidence turns
that the part it adds (or the last 20 messages the model already sees) shows, when the question
is the next prompt, and the bytes it adds. The data is read from the folder given, never copied.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks._recall_data import Exchange

__all__ = ('KINDS', 'LocomoChat', 'LocomoQuestion', 'load_chat', 'recalled')

MINUTE = timedelta(minutes=1)

KINDS = ((4, 'single-hop'), (2, 'temporal'), (1, 'multi-hop'), (3, 'open-domain'))
"""LoCoMo's question categories (the data's `category`), as its paper names them; 5 (adversarial) is left out."""


@dataclass(frozen=True)
class LocomoQuestion:
    """A question, the texts of its evidence turns, its category."""

    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class LocomoChat:
    """One conversation as exchanges, and its questions (category 5 left out)."""

    conversation_id: str
    exchanges: list[Exchange]
    questions: list[LocomoQuestion] = field(default_factory=list[LocomoQuestion])


def _turn_text(turn: dict[str, Any]) -> str:
    text = f'{turn["speaker"]}: {turn["text"]}'
    if turn.get('blip_caption'):
        text += f' [shares a photo: {turn["blip_caption"]}]'
    return text


def load_chat(path: Path) -> LocomoChat:
    """A LoCoMo file as exchanges (consecutive turn pairs per session) and its answerable questions."""
    data = json.loads(path.read_text())
    texts: dict[str, str] = {}
    exchanges: list[Exchange] = []
    number = 1
    while f'session_{number}' in data:
        turns = data[f'session_{number}']
        when = datetime.strptime(data[f'session_{number}_date_time'], '%I:%M %p on %d %B, %Y').replace(tzinfo=UTC)
        for turn in turns:
            texts[turn['dia_id']] = _turn_text(turn)
        for index in range(0, len(turns), 2):
            prompt = _turn_text(turns[index])
            reply = _turn_text(turns[index + 1]) if index + 1 < len(turns) else '(no reply)'
            exchanges.append(Exchange(prompt, reply, when + MINUTE * (index // 2)))
        number += 1
    questions: list[LocomoQuestion] = []
    for qa in data['qa']:
        if qa['category'] == 5:
            continue
        evidence = tuple(texts[dia] for dia in qa['evidence'] if dia in texts)
        if evidence:
            questions.append(LocomoQuestion(qa['question'], evidence, qa['category']))
    return LocomoChat(f'locomo-{path.stem}', exchanges, questions)


def recalled(shown: str, evidence: Sequence[str]) -> int:
    """Evidence turns whose text (its first 60 characters) `shown` holds."""
    return sum(1 for text in evidence if text[:60] in shown)


def first_blocks(answer: str, limit: int = 10) -> str:
    """The first `limit` blocks of an answer."""
    return '\n\n---\n\n'.join(answer.split('\n\n---\n\n')[:limit])


@dataclass
class Side:
    """One configuration's figures over every chat."""

    label: str
    limit: int = 10
    evidence: int = 0
    at10: int = 0
    answer_bytes: list[int] = field(default_factory=list[int])
    latencies: list[float] = field(default_factory=list[float])
    """Each question asked again in a warm process."""
    new_latencies: list[float] = field(default_factory=list[float])
    """Questions a warm process had not been asked (half the questions asked first, the other half timed)."""
    kinds: dict[int, list[int]] = field(default_factory=dict[int, list[int]])
    """Per question category: evidence turns, and those recalled."""

    def add(self, answer: str, question: LocomoQuestion) -> None:
        found = recalled(first_blocks(answer, self.limit), question.evidence)
        self.evidence += len(question.evidence)
        self.at10 += found
        kind = self.kinds.setdefault(question.category, [0, 0])
        kind[0] += len(question.evidence)
        kind[1] += found
        self.answer_bytes.append(len(answer.encode()))

    def by_kind(self) -> str:
        """Recall per question category, as a Markdown row (`KINDS` order)."""
        cells: list[str] = []
        for kind, _ in KINDS:
            total, found = self.kinds.get(kind, (0, 0))
            cells.append(f'{found / total:.3f} ({total})' if total else 'n/a')
        return f'| {self.label} | {" | ".join(cells)} |'

    def row(self) -> str:
        p50 = f'{statistics.median(self.latencies) * 1000:.2f} ms' if self.latencies else 'n/a'
        if self.new_latencies:
            p50 += f' / {statistics.median(self.new_latencies) * 1000:.2f} ms'
        mean = statistics.mean(self.answer_bytes) if self.answer_bytes else 0
        top = max(self.answer_bytes, default=0)
        return f'| {self.label} | {self.at10 / max(self.evidence, 1):.3f} | {mean:,.0f} (max {top:,}) | {p50} |'


def timed(latencies: list[float], began: float) -> None:
    latencies.append(time.perf_counter() - began)
