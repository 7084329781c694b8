"""The ranked matches of a search as data, for `search --json`.

The tool answers with text; a script wants run ids, positions and scores. This module ranks with
the search's own building blocks (the same tokenizer, per-run index, inherited-history sections
and BM25 over in-scope statistics), then orders and de-duplicates the hits the way the tool's
`Searcher` does, so each match is a block of the answer printed beside it (a test holds the two
to each other). The answer may show fewer blocks than there are matches when it reaches its byte
budget.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, cast

from pydantic_ai.messages import ModelMessagesTypeAdapter

from .._errors import CorruptSnapshotError
from ..history import HistorySource
from ..search import Bm25Params, SearchRequest, display_lines, tokenize
from ..search._corpus import Filters, Hit, IndexedRun, Role, build_sections, message_role, message_time, rank_sections
from ._output import iso_time

__all__ = ('ranked_matches',)

_MAX_QUERY_TERMS = 64
"""As the tool: only the first 64 distinct query words count."""


async def ranked_matches(
    source: HistorySource,
    request: SearchRequest,
    *,
    conversation_id: str | None,
    params: Bm25Params,
    max_matches: int,
    context_lines: int,
    skip_tools: Collection[str],
) -> list[dict[str, Any]]:
    """The search's matches, best first: run, position, score, role, time, display text and message.

    Args:
        source: The history source the search read.
        request: The search, already checked by the tool.
        conversation_id: The conversation in scope, or `None` for the whole store.
        params: The BM25 parameters the search used.
        max_matches: How many matches to return at most.
        context_lines: The window each answer block shows, so that a match another block already
            shows is skipped as the answer skips it.
        skip_tools: Tools whose calls and returns are not indexed.
    """
    runs = await source.list_runs(conversation_id=conversation_id)
    if request.run_id is not None:
        runs = [run for run in runs if run.run_id == request.run_id]
    indexed: list[IndexedRun] = []
    for run in runs:
        try:
            history = await source.run_history(run.run_id)
        except CorruptSnapshotError:
            continue  # the answer names it; there is nothing of it to rank
        if history is not None:
            indexed.append(IndexedRun.build(history, skip_tools))
    sections = build_sections(indexed, inherit=request.run_id is None)
    terms = list(dict.fromkeys(tokenize(request.query.replace('\x00', ' '))))[:_MAX_QUERY_TERMS]
    if not terms or not sections:
        return []
    hits, rarity = rank_sections(sections, terms, params, _filters(request))
    if request.order != 'relevance':
        hits.sort(key=_moment, reverse=request.order == 'newest')
    chosen = _distinct(hits, max_matches, context_lines)
    return [_match_json(hit, terms, rarity, skip_tools) for hit in chosen]


def _filters(request: SearchRequest) -> Filters:
    return Filters(
        roles=frozenset(cast(list[Role], request.roles)) if request.roles else None,
        since=_parse(request.since),
        until=_parse(request.until),
    )


def _parse(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value.replace('Z', '+00:00'))
    return moment if moment.tzinfo is not None else moment.astimezone()


def _moment(hit: Hit) -> datetime:
    return message_time(hit.section.indexed.messages[hit.position], hit.section.indexed.run)


def _distinct(hits: list[Hit], limit: int, context_lines: int) -> list[Hit]:
    """The first `limit` hits whose own message no earlier hit's window shows (as the tool chooses)."""
    shown: set[tuple[int, int]] = set()
    chosen: list[Hit] = []
    for hit in hits:
        if len(chosen) >= limit:
            break
        if (hit.section.order, hit.position) in shown:
            continue
        chosen.append(hit)
        start = max(hit.section.first, hit.position - context_lines)
        end = min(len(hit.section.indexed.messages), hit.position + context_lines + 1)
        shown.update((hit.section.order, position) for position in range(start, end))
    return chosen


def _match_json(hit: Hit, terms: list[str], rarity: Mapping[str, float], skip_tools: Collection[str]) -> dict[str, Any]:
    run = hit.section.indexed.run
    message = hit.section.indexed.messages[hit.position]
    return {
        'run_id': run.run_id,
        'conversation_id': run.conversation_id,
        'position': hit.position,
        'score': round(hit.score, 4),
        'role': message_role(message),
        'timestamp': iso_time(message_time(message, run)),
        'lines': display_lines(message, terms, rarity=rarity, skip_tools=skip_tools),
        'message': ModelMessagesTypeAdapter.dump_python([message], mode='json')[0],
    }
