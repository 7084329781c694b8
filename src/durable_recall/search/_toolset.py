"""The `search_conversation_history` tool: its schema, its description, and its one toolset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..text import SEARCH_TOOL_NAME, Role
from ._request import Order, SearchRequest, SearchScope

if TYPE_CHECKING:
    from ._capability import ConversationSearch

__all__ = ('build_toolset', 'tool_description')


def tool_description(scope: SearchScope) -> str:
    """What the model reads about the tool; the last paragraph depends on the scope."""
    text = (
        'Search the persisted history of this agent: earlier turns of this conversation, including '
        'messages that were dropped from your context to save space, and earlier runs.\n\n'
        'Compaction removes old messages from the context (sometimes leaving a short summary or a note), '
        'but every step was persisted, so the originals are still here.\n\n'
        'Results are ranked by BM25: rare words and exact terms score highest, and each word of the '
        'query counts on its own. Each result shows its score, its run, and the messages around the '
        'match, numbered by position in that run; `run_id` limits the search to one run.\n\n'
        'Use it to recall an exact earlier detail (a file path, an id, a value, an error, a decision) '
        'that is no longer in your context or that a summary left out. Do not use it for what is still '
        'in your context, or for outside or current information.'
    )
    if scope == 'conversation':
        text += (
            '\n\nIt searches only the current conversation: other conversations in the same store cannot be reached.'
        )
    return text


def build_toolset(capability: ConversationSearch, *, tool_id: str, scope: SearchScope) -> FunctionToolset[Any]:
    """A toolset holding the search tool, which hands each call to `capability.search`."""

    async def search_conversation_history(
        ctx: RunContext[Any],
        query: str,
        run_id: str | None = None,
        roles: list[Role] | None = None,
        since: str | None = None,
        until: str | None = None,
        order: Order = 'relevance',
    ) -> str:
        """Search persisted conversation history.

        Args:
            ctx: The run context.
            query: Words to look for; distinctive words (names, values, paths) work best.
            run_id: Search only this run, for example one a result or a compaction note named.
            roles: Only return messages from these roles.
            since: Only messages at or after this ISO-8601 time.
            until: Only messages at or before this ISO-8601 time.
            order: `relevance` (default), or `newest` / `oldest` first among the matches.
        """
        request = SearchRequest(
            query=query,
            run_id=run_id,
            roles=list(roles) if roles else None,
            since=since,
            until=until,
            order=order,
        )
        return await capability.search(ctx, request)

    toolset: FunctionToolset[Any] = FunctionToolset(id=tool_id)
    toolset.add_function(search_conversation_history, name=SEARCH_TOOL_NAME, description=tool_description(scope))
    return toolset
