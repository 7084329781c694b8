"""A search request as it crosses a durable boundary, and the checks and filters made of it.

The request holds primitives only (it is an activity's or a step's argument). Everything the model
passes is checked here and answered with a sentence, never an exception: wrong types, run ids no
store can hold (a NUL, a lone surrogate, too long), times out of the calendar's range.

The work one query costs is bounded before it is tokenized: only its first `MAX_QUERY_BYTES`
UTF-8 bytes are read and only its first `MAX_QUERY_TERMS` distinct terms searched. Tokenizing is
pure Python over normalised text (one character can expand eighteen-fold under NFKC), so an
unbounded query would hold the event loop for as long as it is long: a megabyte of U+FDFA took
seconds. 4 KiB is far more than any query needs, and tokenizes in about a millisecond.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeAlias, cast

from .._vocabulary import ORDERS, Order
from ..base import MAX_RUN_ID_LENGTH
from ..text import ROLES, Role, tokenize
from . import _answer

__all__ = (
    'MAX_QUERY_BYTES',
    'MAX_QUERY_TERMS',
    'ORDERS',
    'Filters',
    'Order',
    'SearchRequest',
    'SearchScope',
    'check_request',
    'filters_of',
    'query_terms',
    'search_text',
)

SearchScope: TypeAlias = Literal['conversation', 'all']
"""`'conversation'`: only runs with the calling run's conversation id; `'all'`: the whole store."""

MAX_QUERY_TERMS = 64
"""Distinct query terms searched; the rest of a longer query is ignored."""

MAX_QUERY_BYTES = 4096
"""UTF-8 bytes of a query that are read; the rest is ignored (cut before a partial word)."""

MAX_ROLES = 16
"""The most entries a `roles` list may have: there are four roles, so more is a malformed call."""

_MAX_TIME_LENGTH = 64
"""No ISO-8601 time is longer; a longer `since` or `until` is refused without parsing it."""

_MIN_TIME = datetime.min.replace(tzinfo=UTC)
_MAX_TIME = datetime.max.replace(tzinfo=UTC)


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


def search_text(query: str) -> str:
    """The part of `query` a search reads: its first `MAX_QUERY_BYTES` bytes, NULs as spaces.

    A cut that falls inside a word drops the word's head (`configur` would match other words than
    `configuration`), unless the head is all there is. Lone surrogates (which JSON can carry and no
    encoder accepts) become spaces.
    """
    head = query[:MAX_QUERY_BYTES]  # a character is at least one byte
    if not _encodable(head):
        head = ''.join(' ' if '\ud800' <= char <= '\udfff' else char for char in head)
    data = head.encode()
    if len(data) > MAX_QUERY_BYTES:
        head = data[:MAX_QUERY_BYTES].decode(errors='ignore')  # drops only a character cut in two
    if len(head) < len(query) and _word_char(query[len(head)]):
        end = len(head)
        while end and _word_char(head[end - 1]):
            end -= 1
        if head[:end].strip():
            head = head[:end]
    return head.replace('\x00', ' ')


def query_terms(query: str, stop: Collection[str] = ()) -> list[str]:
    """The distinct terms of `search_text(query)`, in order, at most `MAX_QUERY_TERMS`.

    Terms in `stop` (analysed stopwords, `text.stop_terms`) are left out, unless the query has no
    other: a search for "who are you" still searches those words.
    """
    terms = list(dict.fromkeys(tokenize(search_text(query))))
    if stop:
        kept = [term for term in terms if term not in stop]
        terms = kept or terms
    return terms[:MAX_QUERY_TERMS]


def check_request(request: SearchRequest) -> str | None:
    """The answer that refuses a malformed request, or `None` when it can be searched.

    Types are checked too: the tool's own arguments arrive as strings, but a request built in code
    or decoded from an engine's payload might not, and the answer must still be a sentence.
    """
    typed = _check_types(request)
    if typed is not None:
        return typed
    run_id = request.run_id
    if run_id is not None and (not run_id or len(run_id) > MAX_RUN_ID_LENGTH or not _storable(run_id)):
        # A run id no store can hold (a NUL is refused by Postgres) names no run: the unknown-run answer.
        return _answer.no_run(run_id)
    if request.order not in ORDERS:
        return f'Unknown order {_answer.echo(request.order)}: use {_listed(ORDERS)}.'
    roles = request.roles or []
    if len(roles) > MAX_ROLES:
        return f'{len(roles)} roles is more than there are: use some of {_listed(ROLES)}.'
    unknown = [role for role in dict.fromkeys(roles) if role not in ROLES]
    if unknown:
        return f'Unknown role(s) {", ".join(_answer.echo(r) for r in unknown)}: use {_listed(ROLES)}.'
    for name, value in (('since', request.since), ('until', request.until)):
        if value is not None and parse_time(value) is None:
            return f'{name}={_answer.echo(value)} is not an ISO-8601 time such as 2026-01-31T09:30:00Z.'
    return None


def parse_time(value: str) -> datetime | None:
    """An ISO-8601 time in UTC (a trailing `Z` allowed; no offset means local time), or `None`.

    A time that is valid but outside what UTC can represent (`0001-01-01T00:00+05:00`, or year 1
    in local time east of UTC) is clamped to the first or last representable moment, which is
    what it means as a bound. A malformed one is `None`, never the `ValueError` or `OverflowError`.
    """
    if len(value) > _MAX_TIME_LENGTH or not _storable(value):
        return None
    try:
        moment = datetime.fromisoformat(value.replace('Z', '+00:00'))
    except ValueError:
        return None
    try:
        return (moment if moment.tzinfo is not None else moment.astimezone()).astimezone(UTC)
    except (ValueError, OverflowError):
        return _MIN_TIME if moment.year < 2 else _MAX_TIME


def filters_of(request: SearchRequest) -> Filters:
    """The filters of a checked request."""
    roles = frozenset(cast(list[Role], request.roles)) if request.roles else None
    since = parse_time(request.since) if request.since else None
    until = parse_time(request.until) if request.until else None
    return Filters(roles=roles, since=since, until=until)


def _listed(names: tuple[str, ...]) -> str:
    return ', '.join(names[:-1]) + f' or {names[-1]}'


def _check_types(request: SearchRequest) -> str | None:
    """The answer naming the first argument of the wrong type, or `None`."""
    fields: tuple[tuple[str, object, bool], ...] = (
        ('query', request.query, False),
        ('run_id', request.run_id, True),
        ('since', request.since, True),
        ('until', request.until, True),
        ('order', request.order, False),
    )
    for name, value, optional in fields:
        if not isinstance(value, str) and not (optional and value is None):
            return f'{name} must be a string, not {_type_name(value)}.'
    roles = cast(object, request.roles)  # typed list[str] | None, but built in code it may be anything
    if roles is not None and not _is_list_of_text(roles):
        return f'roles must be a list of role names ({_listed(ROLES)}), not {_type_name(roles)}.'
    return None


def _is_list_of_text(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in cast(list[object], value))


def _type_name(value: object) -> str:
    return 'null' if value is None else type(value).__name__


def _word_char(char: str) -> bool:
    """Whether `char` continues a word (what a regex word class matches), to cut a query between words."""
    return char.isalnum() or char == '_'


def _encodable(text: str) -> bool:
    """Whether `text` encodes to UTF-8 (a lone surrogate does not)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _storable(text: str) -> bool:
    """Whether a store could hold `text` as a key: UTF-8 encodable and free of NUL."""
    return '\x00' not in text and _encodable(text)
