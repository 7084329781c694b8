"""`durable-recall mcp`: the store's memory as read-only MCP tools, over stdio or streamable HTTP.

Built on the official MCP Python SDK's high-level server (`MCPServer`, the SDK's FastMCP). Four
tools, every one read-only (annotated so) and answering in text:

* `search`: the search tool's engine, ranking options and answer (see `_serve_search`);
* `list_conversations`: the conversations in scope, with run counts and times;
* `show_conversation`: a conversation's timeline, a page of messages at a time;
* `show_run`: one run's record, positions numbered as search results number them.

Whatever a client passes gets an answer string, never an exception: a bad value is named in the
answer, an id out of the server's scope is answered as an id that does not exist, and an error of
the store is reported as a line (the server keeps serving).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from .._vocabulary import ORDERS, RANKINGS, ROLES
from ..stores import StepStore
from ._serve_scope import ServeScope, conversation_rows, run_in_scope
from ._serve_search import Query, Searcher, not_in_scope, time_text
from ._serve_timeline import Timeline, read_timeline

__all__ = ('PAGE_LIMIT', 'build_mcp_server', 'timeline_text')

PAGE_LIMIT = 200
"""The most messages one `show_*` call returns; `offset` pages on."""

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

_log = logging.getLogger(__name__)


def build_mcp_server(store: StepStore, scope: ServeScope) -> MCPServer:
    """The MCP server over `store`, answering about the conversations `scope` allows and nothing else."""
    searcher = Searcher(store, scope)
    server = MCPServer(
        name='durable-recall',
        instructions=(
            f'Read-only access to the stored history of Pydantic AI agents ({scope.describe()}). Use `search` '
            'for exact details (BM25-ranked, with the messages around each match), `list_conversations` to '
            'see what is stored, and `show_conversation` / `show_run` to read messages in order.'
        ),
    )

    @server.tool(annotations=_READ_ONLY, structured_output=False)
    async def search(
        query: Annotated[str, Field(description='Words to look for (exact terms, names, numbers, ids).')],
        conversation_id: Annotated[
            str | None, Field(description='The conversation to search (needed when the server serves several).')
        ] = None,
        run_id: Annotated[str | None, Field(description='Search this run only.')] = None,
        roles: Annotated[list[str] | None, Field(description=f'Only these roles: {", ".join(ROLES)}.')] = None,
        since: Annotated[str | None, Field(description='Only messages at or after this ISO-8601 time.')] = None,
        until: Annotated[str | None, Field(description='Only messages at or before this ISO-8601 time.')] = None,
        order: Annotated[str, Field(description=f'One of {", ".join(ORDERS)}.')] = 'relevance',
        ranking: Annotated[str, Field(description=f'One of {", ".join(RANKINGS)}.')] = 'bm25',
        hybrid_weight: Annotated[
            float | None, Field(description="With ranking='hybrid': the similarity side's share, 0 to 1.")
        ] = None,
    ) -> str:
        """Search the stored conversation history: the same ranking and answer as the agent's search tool."""
        request = Query(query, conversation_id, run_id, roles, since, until, order, ranking, hybrid_weight)
        return await _answering('search', lambda: _search(searcher, request))

    @server.tool(annotations=_READ_ONLY, structured_output=False)
    async def list_conversations() -> str:
        """List the stored conversations this server serves, oldest first, with run counts and times."""
        return await _answering('list_conversations', lambda: _list(store, scope))

    @server.tool(annotations=_READ_ONLY, structured_output=False)
    async def show_conversation(
        conversation_id: Annotated[str, Field(description='The conversation (list_conversations names them).')],
        offset: Annotated[int, Field(description='The first message to show (0 = the oldest).')] = 0,
        limit: Annotated[int, Field(description=f'How many messages, 1 to {PAGE_LIMIT}.')] = 50,
    ) -> str:
        """Show a conversation's runs and the messages each added, in order, a page at a time."""
        return await _answering(
            'show_conversation', lambda: _show_conversation(store, scope, conversation_id, offset, limit)
        )

    @server.tool(annotations=_READ_ONLY, structured_output=False)
    async def show_run(
        run_id: Annotated[str, Field(description='The run (search results and show_conversation name runs).')],
        offset: Annotated[int, Field(description='The first position to show.')] = 0,
        limit: Annotated[int, Field(description=f'How many messages, 1 to {PAGE_LIMIT}.')] = 50,
    ) -> str:
        """Show one run's record, each message at the position search results use, a page at a time."""
        return await _answering('show_run', lambda: _show_run(store, scope, run_id, offset, limit))

    return server


async def _answering(tool: str, call: Callable[[], Awaitable[str]]) -> str:
    """The tool's answer; an error of the store becomes a line of text, never an exception for the client."""
    try:
        return await call()
    except Exception as error:
        _log.warning('%s failed: %s', tool, error, exc_info=True)
        return f'The store could not answer ({type(error).__name__}); the server log has the details.'


async def _search(searcher: Searcher, query: Query) -> str:
    if not isinstance(query.query, str) or not query.query.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        return 'Pass the words to look for in `query`.'
    answer, _ = await searcher.search(query)
    return answer


async def _list(store: StepStore, scope: ServeScope) -> str:
    rows = await conversation_rows(store, scope)
    if not rows:
        return 'No conversations are stored here yet.'
    lines = [f'{len(rows)} conversation(s), oldest first:']
    for row in rows:
        lines.append(
            f'- {row.conversation_id}: {row.runs} run(s), first started {time_text(row.first_started_at)}, '
            f'last started {time_text(row.last_started_at)}'
        )
    return '\n'.join(lines)


def _page_bounds(offset: Any, limit: Any) -> tuple[int, int] | str:
    if not isinstance(offset, int) or offset < 0:
        return f'Invalid offset {offset!r}: pass 0 or more.'
    if not isinstance(limit, int) or not 1 <= limit <= PAGE_LIMIT:
        return f'Invalid limit {limit!r}: pass 1 to {PAGE_LIMIT}.'
    return offset, limit


async def _show_conversation(store: StepStore, scope: ServeScope, conversation_id: str, offset: int, limit: int) -> str:
    bounds = _page_bounds(offset, limit)
    if isinstance(bounds, str):
        return bounds
    if not conversation_id or not scope.allows(conversation_id):
        return not_in_scope('conversation', conversation_id)
    runs = await store.list_runs(conversation_id=conversation_id)
    if not runs:
        return not_in_scope('conversation', conversation_id)
    timeline = await read_timeline(store, runs, offset=bounds[0], limit=bounds[1])
    return timeline_text(f'Conversation {conversation_id}', timeline)


async def _show_run(store: StepStore, scope: ServeScope, run_id: str, offset: int, limit: int) -> str:
    bounds = _page_bounds(offset, limit)
    if isinstance(bounds, str):
        return bounds
    run = await run_in_scope(store, scope, run_id)
    if run is None:
        return not_in_scope('run', run_id)
    timeline = await read_timeline(store, [run], offset=bounds[0], limit=bounds[1], own_only=False)
    head = (
        f'Run {run.run_id} (conversation {run.conversation_id or "-"}, agent {run.agent_name or "-"}, '
        f'started {time_text(run.started_at)})'
    )
    return timeline_text(head, timeline)


def timeline_text(head: str, timeline: Timeline) -> str:
    """A timeline page as text: a header, each run as it begins, each message with its parts."""
    if not timeline.total:
        return f'{head}: no messages stored yet.'
    last = timeline.offset + len(timeline.entries)
    lines = [f'{head}: messages {timeline.offset}-{last - 1} of {timeline.total}.']
    starts = {span.start: span for span in timeline.runs if span.count}
    for entry in timeline.entries:
        span = starts.get(entry.index)
        if span is not None or entry is timeline.entries[0]:
            run = span.run if span is not None else next(s.run for s in timeline.runs if s.run.run_id == entry.run_id)
            lines.append(f'\n== run {run.run_id} (started {time_text(run.started_at)})')
        mark = ' [compaction summary: the context before it was cut]' if entry.summary else ''
        if entry.cut:
            mark = ' [compaction cut: the model no longer saw the messages before this one]'
        lines.append(f'[{entry.position}] {entry.role} {time_text(entry.timestamp)}{mark}')
        for part in entry.parts:
            lines.append(f'  {part.label}: {part.text}')
    if timeline.has_next:
        lines.append(f'\n(more: call again with offset={last})')
    return '\n'.join(lines)
