"""What a process's first search would otherwise build on its way: done once, when a search engine is built.

A worker builds its agent and capabilities at startup; its first search should cost what a later
one does, not carry one-time work. On the way to its answer, a fresh process's first search
imported the stemmer (the analyzer loads it on first use, so that a command line that never
searches does not), ran pydantic's message validators for the first time on each part type
(their first run costs about twice a later one), and rendered its first blocks. Building a
`SearchEngine` now does each of these once, on a small sample: about a millisecond, at startup.

It then runs one full garbage collection (30 to 50 ms here). A process that has just imported
pydantic-ai holds a few hundred thousand objects the collector has not yet counted as long-lived,
so the first full collection is due soon after, triggered by whatever allocates next: that was
a fresh process's first search (a 40 to 60 ms stall inside a 50 ms search of a chat on Postgres).
Collected at startup, the next full collection waits until a quarter as many objects again have
survived, long after a first search. The collector is paused during the sample's work, so
that the collection it may be due for falls into that one and is not run twice.
"""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from functools import cache

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..base import dump_messages, load_messages
from ..text import DEFAULT_SKIP_TOOLS, display_lines, prepare_stored, stored_lines
from ._request import query_terms

__all__ = ('warm_up',)


@cache
def warm_up() -> None:
    """Load the analyzer's stemmer, and decode and render a sample of each common message part (once a process)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        _sample()
    finally:
        if enabled:
            gc.enable()
    gc.collect()


def _sample() -> None:
    terms = query_terms('warming the analyzer up')
    at = datetime(2026, 1, 1, tzinfo=UTC)
    sample = [
        ModelRequest(
            parts=[
                SystemPromptPart(content='You are a warm-up.', timestamp=at),
                UserPromptPart(content='Where is the config file?', timestamp=at),
            ],
            timestamp=at,
        ),
        ModelResponse(
            parts=[
                TextPart(content='Looking.'),
                ToolCallPart(tool_name='read', args={'path': 'a.py'}, tool_call_id='1'),
            ],
            timestamp=at,
        ),
        ModelRequest(
            parts=[ToolReturnPart(tool_name='read', content={'lines': ['x = 1']}, tool_call_id='1', timestamp=at)],
            timestamp=at,
        ),
    ]
    bodies = dump_messages(sample)
    for message in load_messages(bodies):
        display_lines(message, terms)
    for body in bodies:  # what an answer renders from (`_shown`)
        prepared = prepare_stored(body)
        if prepared is not None:
            stored_lines(prepared, terms, skip_tools=DEFAULT_SKIP_TOOLS)
