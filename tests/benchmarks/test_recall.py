"""The recall benchmark at its tiny size: it plays the chat, asks its questions and scores the answers."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from benchmarks._recall import measure_recall, score_answer
from benchmarks._recall_data import generate_recall_chat

from durable_recall.text import tokenize
from tests.hybrid._kit import HAS_SEMANTIC

pytestmark = pytest.mark.anyio


def test_the_chat_is_seeded_and_its_evidence_is_known() -> None:
    one = generate_recall_chat(7, sessions=3, per_session=8, rounds=1)
    assert one == generate_recall_chat(7, sessions=3, per_session=8, rounds=1)
    assert {question.kind for question in one.questions} == {'paraphrase', 'time', 'context'}
    for question in one.questions:
        assert all(0 <= index < len(one.exchanges) for index in question.evidence)
    days = {exchange.at.date() for exchange in one.exchanges}
    assert len(days) == 3  # sessions on different days


def test_some_questions_share_no_stem_with_their_evidence() -> None:
    # The benchmark must be able to show a miss: not every question matches its evidence's terms.
    chat = generate_recall_chat(7, sessions=3, per_session=8, rounds=1)
    stopwords = set(tokenize('the a is to for my i what did do where how on in of that we our am as'))
    disjoint = 0
    for question in chat.questions:
        asked = set(tokenize(question.text)) - stopwords
        said = {term for index in question.evidence for term in tokenize(chat.exchanges[index].prompt)}
        disjoint += not (asked & said)
    assert disjoint >= 1


def test_score_counts_blocks() -> None:
    answer = 'head\n\nfirst block\n\n---\n\nsecond: the evidence here'
    assert score_answer(answer, ['the evidence here']) == (1, 1, 1)
    assert score_answer(answer, ['not shown']) == (0, 0, 0)


async def test_tiny_run(tmp_path: Path) -> None:
    args = argparse.Namespace(size='tiny', no_reference=True, no_hybrid=not HAS_SEMANTIC, postgres=None)
    report = await measure_recall(args, tmp_path)
    assert '| ours, english (default) |' in report
    assert ('| ours, hybrid (local default) |' in report) == HAS_SEMANTIC
    assert 'seed held-out' in report
