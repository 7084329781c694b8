"""A search request as it crosses a durable boundary, and the checks and filters made of it.

The request holds primitives only (it is an activity's or a step's argument). Everything the model
passes is checked here and answered with a sentence, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeAlias, cast

from .._vocabulary import ORDERS, Order
from ..base import MAX_RUN_ID_LENGTH
from ..text import ROLES, Role, tokenize
from . import _answer

__all__ = (
    'MAX_QUERY_TERMS',
    'ORDERS',
    'Filters',
    'Order',
    'SearchRequest',
    'SearchScope',
    'check_request',
    'filters_of',
    'query_terms',
)

SearchScope: TypeAlias = Literal['conversation', 'all']
"""`'conversation'`: only runs with the calling run's conversation id; `'all'`: the whole store."""

MAX_QUERY_TERMS = 64
"""Distinct query terms searched; the rest of a longer query is ignored."""


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """The tool's arguments, as they cross a durable boundary (primitive fields only).

    Attributes:
        query: The model's query text.
        run_id: Limit the search to this run.
        roles: Only return messages from these roles.
        since: Only messages at or after this ISO-8601 time.
        until: Only messages at or before this ISO-8601 time.
        order: Result order.
    """

    query: str
    run_id: str | None = None
    roles: list[str] | None = None
    since: str | None = None
    until: str | None = None
    order: str = 'relevance'


@dataclass(frozen=True)
class Filters:
    """What the model may narrow a search by (statistics still cover the whole scope)."""

    roles: frozenset[Role] | None = None
    since: datetime | None = None
    until: datetime | None = None

    @property
    def active(self) -> bool:
        """Whether any filter is set."""
        return self.roles is not None or self.since is not None or self.until is not None


def query_terms(query: str) -> list[str]:
    """The query's distinct terms, in order, at most `MAX_QUERY_TERMS`."""
    return list(dict.fromkeys(tokenize(query)))[:MAX_QUERY_TERMS]


def check_request(request: SearchRequest) -> str | None:
    """The answer that refuses a malformed request, or `None` when it can be searched."""
    if request.run_id is not None and (len(request.run_id) > MAX_RUN_ID_LENGTH or not request.run_id):
        return _answer.no_run(request.run_id)
    if request.order not in ORDERS:
        return f'Unknown order {_answer.echo(request.order)}: use {_listed(ORDERS)}.'
    unknown = sorted(set(request.roles or ()) - set(ROLES))
    if unknown:
        return f'Unknown role(s) {", ".join(_answer.echo(r) for r in unknown)}: use {_listed(ROLES)}.'
    for name, value in (('since', request.since), ('until', request.until)):
        if value is not None and parse_time(value) is None:
            return f'{name}={_answer.echo(value)} is not an ISO-8601 time such as 2026-01-31T09:30:00Z.'
    return None


def parse_time(value: str) -> datetime | None:
    """An ISO-8601 time (a trailing `Z` allowed; no offset means local time), or `None`.

    `None` too for a time local time cannot represent (year 1 east of UTC, say): the model gets
    the same sentence as for a malformed one, never the `ValueError` or `OverflowError`.
    """
    try:
        moment = datetime.fromisoformat(value.replace('Z', '+00:00'))
        return moment if moment.tzinfo is not None else moment.astimezone()
    except (ValueError, OverflowError):
        return None


def filters_of(request: SearchRequest) -> Filters:
    """The filters of a checked request."""
    roles = frozenset(cast(list[Role], request.roles)) if request.roles else None
    since = parse_time(request.since) if request.since else None
    until = parse_time(request.until) if request.until else None
    return Filters(roles=roles, since=since, until=until)


def _listed(names: tuple[str, ...]) -> str:
    return ', '.join(names[:-1]) + f' or {names[-1]}'
