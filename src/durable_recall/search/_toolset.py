"""The `search_conversation_history` tool: its schema, its description, and its one toolset.

The schema the model reads is strict (strings, an enum of roles and orders), but what the tool
accepts is lenient: an argument of the wrong JSON type (a number for `since`, a string for `roles`,
`null` for `query`), a missing `query` or an argument the tool does not have is turned into something `check_request`
answers with a sentence. Left to pydantic-ai's validation it would be a retry prompt, and a model
that repeated the mistake past the tool's retry limit would fail the whole agent run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import FunctionToolset

from .._vocabulary import ORDERS
from ..text import ROLES, SEARCH_TOOL_NAME
from . import _answer
from ._request import SearchRequest, SearchScope

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
        'in your context, or for outside or current information.\n\n'
        'One search finds the turns that use its words. When the answer may be spread over several turns '
        '(everything someone did, every place that came up), search again with the specific words the '
        'first results show.'
    )
    if scope == 'conversation':
        text += (
            '\n\nIt searches only the current conversation: other conversations in the same store cannot be reached.'
        )
    return text


_MAX_ECHOED = 200
"""Characters of an argument of the wrong type kept when it is turned into text (answers clip further)."""


def _as_text(value: object) -> str:
    """A JSON value where a string belongs, as text: `check_request` then answers about it."""
    if isinstance(value, str):
        return value
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (ValueError, TypeError, RecursionError):  # an int past Python's digit limit, a deep nest
        text = f'<{type(value).__name__}>'
    return text[:_MAX_ECHOED]


def _text(value: object) -> object:
    return None if value is None else _as_text(value)


def _query(value: object) -> object:
    return '' if value is None else _as_text(value)


def _order(value: object) -> object:
    return 'relevance' if value is None else _as_text(value)


def _roles(value: object) -> object:
    if value is None or value == []:
        return None
    items: list[object] = list(value) if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownArgumentType]
    return [_as_text(item) for item in items]


_ROLES_SCHEMA = {
    'anyOf': [{'items': {'enum': list(ROLES), 'type': 'string'}, 'type': 'array'}, {'type': 'null'}],
    'default': None,
}
_ORDER_SCHEMA = {'default': 'relevance', 'enum': list(ORDERS), 'type': 'string'}

Query = Annotated[str, BeforeValidator(_query)]
Text = Annotated[str | None, BeforeValidator(_text)]
Roles = Annotated[list[str] | None, BeforeValidator(_roles), WithJsonSchema(_ROLES_SCHEMA)]
OrderText = Annotated[str, BeforeValidator(_order), WithJsonSchema(_ORDER_SCHEMA)]


def build_toolset(
    capability: ConversationSearch, *, tool_id: str, scope: SearchScope, ui_visibility: str | None = None
) -> FunctionToolset[Any]:
    """A toolset holding the search tool, which hands each call to `capability.search`.

    `ui_visibility` marks the tool for pydantic-ai's UI adapters (`None`: unmarked, their default),
    when its answers may quote tools they keep from the client (`ConversationSearch.show_hidden_tools`).
    """

    async def search_conversation_history(
        ctx: RunContext[Any],
        query: Query = '',
        run_id: Text = None,
        roles: Roles = None,
        since: Text = None,
        until: Text = None,
        order: OrderText = 'relevance',
        **unknown: Any,
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
            unknown: Arguments the tool does not take; answered with a sentence naming them.
        """
        if unknown:
            return _unknown_arguments(unknown)
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
    # Passed only when set: pydantic-ai before 2.78 has no `ui_visibility` (the capability refuses the option there).
    marked: dict[str, Any] = {} if ui_visibility is None else {'ui_visibility': ui_visibility}
    toolset.add_function(
        search_conversation_history, name=SEARCH_TOOL_NAME, description=tool_description(scope), **marked
    )
    # `**unknown` opens the schema to any argument, and the default makes `query` optional (a call
    # without one gets the no-words answer): the model is still told the six arguments, `query` required.
    schema = toolset.tools[SEARCH_TOOL_NAME].function_schema.json_schema
    schema['additionalProperties'] = False
    schema['properties'].pop('unknown', None)
    schema['properties']['query'].pop('default', None)
    schema['required'] = ['query']
    return toolset


def _unknown_arguments(unknown: dict[str, Any]) -> str:
    names = sorted(unknown)
    listed = ', '.join(_answer.echo(name) for name in names[:5])
    if len(names) > 5:
        listed += f' and {len(names) - 5} more'
    return (
        f'{SEARCH_TOOL_NAME} takes no argument {listed}: pass `query`, and optionally `run_id`, `roles`, '
        '`since`, `until` and `order`.'
    )
