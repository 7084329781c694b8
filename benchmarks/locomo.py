"""Recall on LoCoMo chats: `python -m benchmarks.locomo --data ../shared/data/locomo-dev` (see `benchmarks._locomo`).

Options: `--budgets 4000,8000,16000` (the answer budgets measured besides the default), `--no-hybrid`,
`--no-autorecall`, `--matches 10,50` (also the evidence among the first k matches shown alone, no
context: what ranking alone reaches),
`--no-reference`, `--reference-python PATH` (a Python with pydantic-ai-harness 0.62; default: the
cached reference venv, created on first use), `--chats 26,30` (a subset), `--work DIR` (keep the
played stores there and reuse them on the next run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage

from benchmarks._locomo import KINDS, LocomoChat, Side, load_chat, timed
from benchmarks._locomo_auto import auto_recall, describe
from benchmarks._measure import run_json
from benchmarks._recall import _play  # pyright: ignore[reportPrivateUsage]
from benchmarks._venv import reference_python
from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, update_index
from durable_recall.search import SearchRequest


async def _played(chat: LocomoChat, work: Path) -> Path:
    path = work / f'{chat.conversation_id}.db'
    if not path.exists():
        await _play(SqliteStepStore(database=path), chat)  # pyright: ignore[reportArgumentType]
    return path


async def _matches_alone(sides: dict[str, Side], ranking: str, path: Path, chat: LocomoChat, depths: list[int]) -> None:
    """The evidence among the first k matches themselves: no context, a budget that never binds."""
    store = SqliteStepStore(database=path)
    try:
        tool = ConversationSearch(
            SnapshotHistorySource(store),
            scope='conversation',
            ranking=ranking,  # pyright: ignore[reportArgumentType]
            context_lines=0,
            max_matches=max(depths),
            max_result_bytes=1_000_000,
        )
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=chat.conversation_id)
        for question in chat.questions:
            answer = await tool.search(ctx, SearchRequest(query=question.text))
            for depth in depths:
                label = f'{ranking}: the first {depth} matches alone'
                side = sides.setdefault(label, Side(label, limit=depth))
                side.add(answer, question)
    finally:
        await store.aclose()


async def _ours(sides: dict[str, Side], label: str, path: Path, chat: LocomoChat, **options: Any) -> None:
    store = SqliteStepStore(database=path)
    try:
        await update_index(store)
        tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', **options)
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=chat.conversation_id)
        side = sides.setdefault(label, Side(label))
        for question in chat.questions:
            side.add(await tool.search(ctx, SearchRequest(query=question.text)), question)
        if options.get('ranking', 'bm25') == 'bm25':
            for question in chat.questions:
                began = time.perf_counter()
                await tool.search(ctx, SearchRequest(query=question.text))
                timed(side.latencies, began)
            # Questions a warm process has not been asked: a fresh tool asks half the questions,
            # then the other half is timed (repeats are served partly from the messages kept).
            fresh = ConversationSearch(SnapshotHistorySource(store), scope='conversation', **options)
            for question in chat.questions[1::2]:
                await fresh.search(ctx, SearchRequest(query=question.text))
            for question in chat.questions[0::2]:
                began = time.perf_counter()
                await fresh.search(ctx, SearchRequest(query=question.text))
                timed(side.new_latencies, began)
    finally:
        await store.aclose()


def _reference(sides: dict[str, Side], chat: LocomoChat, work: Path, python: Path) -> None:
    script = work / f'{chat.conversation_id}-reference.json'
    script.write_text(
        json.dumps(
            {
                'conversation_id': chat.conversation_id,
                'exchanges': [[e.prompt, e.reply, e.at.isoformat()] for e in chat.exchanges],
                'questions': [q.text for q in chat.questions],
                'warm_rounds': 1,
            }
        )
    )
    database = work / f'{chat.conversation_id}-reference.db'
    database.unlink(missing_ok=True)
    env = dict(os.environ)
    env.pop('VIRTUAL_ENV', None)
    env['PYTHONPATH'] = str(Path(__file__).resolve().parent.parent)
    out = run_json([str(python), '-m', 'benchmarks._recall_reference', str(script), str(database)], 3600, env=env)
    side = sides.setdefault('reference (harness 0.62)', Side('reference (harness 0.62)'))
    if out is None:
        return
    for question, answer in zip(chat.questions, out['answers'], strict=True):
        side.add(answer, question)
    side.latencies += out['latencies']


async def measure(args: argparse.Namespace) -> str:
    """Every chat, every side; the report as Markdown."""
    files = sorted(Path(args.data).glob('*.json'))
    if args.chats:
        wanted = set(args.chats.split(','))
        files = [path for path in files if path.stem in wanted]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix='bench-locomo-'))
    work.mkdir(parents=True, exist_ok=True)
    budgets = [int(value) for value in args.budgets.split(',')] if args.budgets else []
    depths = [int(value) for value in args.matches.split(',')] if args.matches else []
    sides: dict[str, Side] = {}
    auto: dict[str, Side] = {}
    rankings = ['bm25'] if args.no_hybrid else ['bm25', 'hybrid']
    for path in files:
        chat = load_chat(path)
        played = await _played(chat, work)
        for ranking in rankings:
            await _ours(sides, f'ours, {ranking} (default budget)', played, chat, ranking=ranking)
            for budget in budgets:
                await _ours(
                    sides, f'ours, {ranking}, {budget:,} bytes', played, chat, ranking=ranking, max_result_bytes=budget
                )
            if depths:
                await _matches_alone(sides, ranking, played, chat, depths)
        if not args.no_autorecall:
            await auto_recall(chat, played, auto)
        if not args.no_reference:
            python = Path(args.reference_python) if args.reference_python else reference_python()[0]
            _reference(sides, chat, work, python)
    questions = sum(len(load_chat(path).questions) for path in files)
    lines = [
        f'{len(files)} chats, {questions} questions (category 5 left out)',
        '',
        '| side | recall@10 | answer bytes | warm p50 (repeated / new question) |',
        '| --- | --- | --- | --- |',
        *(side.row() for side in sides.values()),
        '',
        '| recall@10 by question kind (evidence turns) | ' + ' | '.join(name for _, name in KINDS) + ' |',
        '| --- |' + ' --- |' * len(KINDS),
        *(side.by_kind() for side in sides.values()),
        '',
        '| AutoRecall (question as the next prompt) | evidence in view | bytes added (mean) | questions with none |',
        '| --- | --- | --- | --- |',
        *(describe(side) for side in auto.values()),
    ]
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, measure, print the report."""
    parser = argparse.ArgumentParser(prog='python -m benchmarks.locomo', description=__doc__)
    parser.add_argument('--data', required=True, help='a folder of LoCoMo conversation files')
    parser.add_argument('--budgets', default='4000,8000,16000', help='answer budgets measured (bytes, comma-separated)')
    parser.add_argument('--chats', help='only these files (stems, comma-separated)')
    parser.add_argument('--work', help='keep the played stores here (reused when present)')
    parser.add_argument(
        '--matches', help='also: the evidence among the first k matches alone, no context (k comma-separated)'
    )
    parser.add_argument('--no-hybrid', action='store_true')
    parser.add_argument('--no-reference', action='store_true')
    parser.add_argument('--no-autorecall', action='store_true')
    parser.add_argument('--reference-python', help='a Python with pydantic-ai-harness 0.62')
    print(asyncio.run(measure(parser.parse_args(argv))), flush=True)


if __name__ == '__main__':
    main()
