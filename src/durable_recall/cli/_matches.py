"""The ranked matches of a search as data, for `search --json`.

The tool answers with text; a script wants run ids, positions and scores. The `SearchEngine`'s
`rank` returns the very hits the answer shows as blocks, so each match here is a block of the
answer printed beside it. The answer may show fewer blocks than there are matches when it
reaches its byte budget.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic_ai.messages import ModelMessagesTypeAdapter

from ..search import Hit, Outcome
from ..text import display_lines, message_role, message_time
from ._output import iso_time

__all__ = ('match_records',)


def match_records(outcome: Outcome, skip_tools: Collection[str]) -> list[dict[str, Any]]:
    """The search's matches, best first: run, position, score, role, time, display text and message."""
    return [_match_json(hit, outcome.terms, outcome.rarity, skip_tools) for hit in outcome.hits]


def _match_json(hit: Hit, terms: list[str], rarity: Mapping[str, float], skip_tools: Collection[str]) -> dict[str, Any]:
    run = hit.run
    message = hit.message
    return {
        'run_id': run.run_id,
        'conversation_id': run.conversation_id,
        'position': hit.position,
        'score': round(hit.score, 4),
        'role': message_role(message),
        'timestamp': iso_time(message_time(message, run.started_at)),
        'lines': display_lines(message, terms, rarity=rarity, skip_tools=skip_tools),
        'message': ModelMessagesTypeAdapter.dump_python([message], mode='json')[0],
    }
