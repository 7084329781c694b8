"""The words the tool, the index and the command line share: the tool's name, roles, orders, rankings.

Below every layer and importing nothing, so that the command line can build its parser (and
answer `--help` at once) without loading the library, while each value is still defined once.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

__all__ = ('DEFAULT_HYBRID_WEIGHT', 'ORDERS', 'RANKINGS', 'ROLES', 'SEARCH_TOOL_NAME', 'Order', 'Ranking', 'Role')

SEARCH_TOOL_NAME = 'search_conversation_history'
"""The name the search tool registers under: compatibility data (histories and markers carry it)."""

Role: TypeAlias = Literal['user', 'assistant', 'tool', 'system', 'summary', 'capability']
"""Who a message is from, for the tool's `roles` filter: `summary` is a compaction summary (one a
summarizing compaction or a provider wrote), indexed once, apart from the messages it restates;
`capability` is a request of capability parts (pydantic-ai 2.78): data or instructions a capability
or the application added mid-conversation, such as a background job's report."""

ROLES: tuple[Role, ...] = get_args(Role)
"""Every role, in the order the index codes them (stored role bytes are indexes into it)."""

Order: TypeAlias = Literal['relevance', 'newest', 'oldest']
"""How results are ordered: by BM25 score, or by message time among the matches."""

ORDERS: tuple[Order, ...] = get_args(Order)
"""Every order, as the tool and the command line offer them."""

Ranking: TypeAlias = Literal['bm25', 'hybrid']
"""How a search ranks: BM25 alone, or BM25 fused with embedding similarity."""

RANKINGS: tuple[Ranking, ...] = get_args(Ranking)
"""Every ranking, as `ConversationSearch` and the command line offer them."""

DEFAULT_HYBRID_WEIGHT = 0.5
"""The similarity side's share in hybrid fusion by default (why 0.5: `search._fusion`)."""
