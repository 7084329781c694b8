"""`ConversationSearch`: the capability that gives an agent `search_conversation_history`."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.durable_operation import durable_operation
from pydantic_ai.embeddings import Embedder
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..base import DurableRecallDeprecationWarning
from ..history import HistorySource
from ..index import Bm25Params
from ..stores import open_spec_store
from ..text import ENGLISH_STOPWORDS, SEARCH_TOOL_NAME, check_stopwords
from ._embedding import Ranking, check_ranking
from ._engine import SearchEngine
from ._fusion import DEFAULT_WEIGHT
from ._request import SearchRequest, SearchScope
from ._snapshot_source import SnapshotHistorySource
from ._toolset import build_toolset
from ._withheld import ShowHidden, check_visibility_options, skip_tools_for

__all__ = ('SPEC_NAME', 'ConversationSearch')

SPEC_NAME = 'durable_recall.ConversationSearch'
"""`ConversationSearch`'s name in agent specs: compatibility data, pinned in a test."""

_COMPARED = (
    'source',
    'scope',
    'max_matches',
    'context_lines',
    'bm25_k1',
    'bm25_b',
    'add_instructions',
    'tool_id',
    'max_result_bytes',
    'description',
    'defer_loading',
    'ranking',
    'embedder',
    'hybrid_weight',
    'show_hidden_tools',
    'hidden_tools',
    'stopwords',
    'neighbour_weights',
)


_DEFAULTS = Bm25Params()
"""BM25's defaults, defined once (in `Bm25Params`)."""


@dataclass
class ConversationSearch(AbstractCapability[Any]):
    """Give the agent `search_conversation_history`: BM25-ranked recall over persisted history.

    Pair it with `StepPersistence` on the same store (`ConversationSearch(SnapshotHistorySource(
    store), scope='conversation')`): everything the agent's runs persisted is searchable,
    including turns that compaction dropped from the live context and earlier runs of the same
    conversation.

    Args:
        source: Where history is read from, usually `SnapshotHistorySource(store)`.
        scope: `'conversation'` searches only runs with the calling run's conversation id (and
            answers without searching when the run has none); `'all'` searches every run in the
            store, for stores that hold one principal's history. Leaving it unset means
            `'conversation'` and warns once, so that the choice is made on purpose.
        max_matches: The most result blocks per call (at least 1).
        context_lines: Messages shown before and after each match: along the conversation (the
            neighbouring runs, in order) with `scope='conversation'`, within the match's run for
            `scope='all'` and for a `run_id` search.
        bm25_k1: BM25 term-frequency saturation (finite, at least 0).
        bm25_b: BM25 length normalisation (0 to 1).
        add_instructions: Tell the model in its instructions that the tool exists and when to use it.
        tool_id: The id of the toolset that holds the tool.
        max_result_bytes: The most UTF-8 bytes one result may have; far below Temporal's 2 MB
            payload limit by default.
        ranking: `'bm25'` (the default) ranks by BM25 alone; `'hybrid'` fuses BM25 with the
            similarity of message embeddings, so that a paraphrase with few words in common can
            still be found. Message vectors are computed as the index catches up, inside the
            search operation, and stored beside the index under the model's name.
        embedder: Hybrid ranking's pydantic-ai `Embedder` (any provider it supports). Leaving it
            unset uses the local default, all-MiniLM-L6-v2 on CPU from `durable-recall[semantic]`
            (no network, no API key); it embeds a query with one torch thread and batches with
            torch's own setting unless the environment variable `DURABLE_RECALL_LOCAL_THREADS`
            sets both (a count, or `torch`). Only with `ranking='hybrid'`.
        hybrid_weight: The similarity side's share when scores are fused (0 to 1; BM25 has the rest).
        show_hidden_tools: Answers never show the calls and returns of tools whose pydantic-ai
            `ui_visibility` is `'private'` or `'redacted'` (a UI adapter keeps those from the chat
            client; quoting them would hand the client what it was kept from). `'redacted'` shows
            redacted tools' parts, and marks the search tool `'redacted'` in turn; `'private'` shows
            both and marks it `'private'`, so the adapters keep the answers from the client. Needs
            pydantic-ai-slim>=2.78.
        hidden_tools: Visibilities by tool name (`'redacted'` or `'private'`) for parts stored
            without a `ui_visibility` stamp: by an older pydantic-ai, or before a tool was marked.
            The stricter of a part's stamp and its tool's entry decides.
        stopwords: Words a query is searched without, when it has others: by default the English
            function words a question is phrased with (`ENGLISH_STOPWORDS`), which in a chat match
            the other questions rather than the answer. Only the query changes (the index keeps
            every word); a query of stopwords alone keeps them. Pass `()` to search every word, or
            words of your own (another language's).
        neighbour_weights: After BM25 has scored the messages, each matching message's score adds
            these shares of the scores of the messages one, two, ... steps before and after it
            (along the conversation, as `context_lines` walks): a match in the middle of a passage
            about the query ranks above one said in passing, and its block shows the passage. A
            message without a query word is never a hit. `(0.5, 0.25)` by default; `()` ranks by
            BM25 alone. Numbers from 0 to 1, at most 8.
        id: The capability id; capabilities with one id are combined (see `combine`).
    """

    source: HistorySource
    scope: SearchScope | None = None
    max_matches: int = 10
    context_lines: int = 5
    bm25_k1: float = _DEFAULTS.k1
    bm25_b: float = _DEFAULTS.b
    add_instructions: bool = True
    tool_id: str = 'conversation-search'
    max_result_bytes: int = 16_000
    _: KW_ONLY
    ranking: Ranking = 'bm25'
    embedder: Embedder | None = None
    hybrid_weight: float = DEFAULT_WEIGHT
    show_hidden_tools: ShowHidden | None = None
    hidden_tools: Mapping[str, ShowHidden] = field(default_factory=dict[str, ShowHidden])
    stopwords: Collection[str] = ENGLISH_STOPWORDS
    neighbour_weights: Sequence[float] = _DEFAULTS.neighbours
    id: str | None = 'conversation_search'

    _engine: SearchEngine = field(init=False, repr=False, compare=False)
    _toolset: FunctionToolset[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.source, HistorySource):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f'ConversationSearch needs a HistorySource, got {type(self.source).__name__}: '
                'use SnapshotHistorySource(store) over the store StepPersistence writes to.'
            )
        if self.scope not in (None, 'conversation', 'all'):
            raise ValueError(f"scope must be 'conversation' or 'all', got {self.scope!r}")
        _check_int('max_matches', self.max_matches, minimum=1)
        _check_int('context_lines', self.context_lines, minimum=0)
        _check_int('max_result_bytes', self.max_result_bytes, minimum=2048)
        params = Bm25Params(k1=self.bm25_k1, b=self.bm25_b, neighbours=self.neighbour_weights)
        self.neighbour_weights = params.neighbours  # a tuple: a list of the same weights compares equal
        check_ranking(self.ranking, self.embedder, self.hybrid_weight)
        if not isinstance(self.add_instructions, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'add_instructions must be a bool, got {self.add_instructions!r}')
        if not isinstance(self.tool_id, str) or not self.tool_id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f'tool_id must be a non-empty string, got {self.tool_id!r}')
        check_visibility_options(self.show_hidden_tools, self.hidden_tools)
        if self.scope is None:
            warnings.warn(
                "`ConversationSearch` was created without a scope, so it uses scope='conversation': it searches "
                'only runs that share the calling run\'s conversation id. Pass scope="conversation" to keep that '
                "and silence this warning, or scope='all' to search every run in the store (only for stores that "
                "hold one principal's history). The default will stay 'conversation'; the warning will go.",
                DurableRecallDeprecationWarning,
                stacklevel=3,
            )
        self._engine = SearchEngine(
            source=self.source,
            params=params,
            max_matches=self.max_matches,
            context_lines=self.context_lines,
            max_result_bytes=self.max_result_bytes,
            skip_tools=skip_tools_for(self.show_hidden_tools, self.hidden_tools),
            ranking=self.ranking,
            embedder=self.embedder,
            hybrid_weight=float(self.hybrid_weight),
            stopwords=check_stopwords(self.stopwords),
        )
        # One toolset for the capability's lifetime: durable engines register it by identity.
        self._toolset = build_toolset(
            self, tool_id=self.tool_id, scope=self.effective_scope, ui_visibility=self.show_hidden_tools
        )

    @property
    def effective_scope(self) -> SearchScope:
        """The scope searches use: `scope`, or `'conversation'` when it was left unset."""
        return self.scope or 'conversation'

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Its name in an agent spec (YAML or JSON): prefixed, so that it cannot collide with another library's."""
        return SPEC_NAME

    @classmethod
    def from_spec(cls, store: str, **options: Any) -> ConversationSearch:
        """Build it from an agent spec: a search over the store a URL names (`open_store`'s forms).

        The other arguments are `__init__`'s; `embedder`, when given, is a pydantic-ai model name
        (`'openai:text-embedding-3-small'`), made into an `Embedder`.

        Raises:
            TypeError, ValueError, StoreConfigurationError: A bad argument, named.
        """
        embedder = options.get('embedder')
        if embedder is not None:
            if not isinstance(embedder, str):
                raise TypeError(f'embedder in an agent spec must be a model name (a string), got {embedder!r}')
            options['embedder'] = Embedder(embedder)
        if 'source' in options:
            raise TypeError('ConversationSearch in an agent spec takes `store` (a URL), not `source`')
        return cls(SnapshotHistorySource(open_spec_store(store, 'ConversationSearch')), **options)

    def get_toolset(self) -> FunctionToolset[Any]:
        """The capability's one toolset (the same object on every call)."""
        return self._toolset

    def get_instructions(self) -> str | None:
        """Tell the model the tool exists, what it reaches and when to reach for it."""
        if not self.add_instructions:
            return None
        reach = (
            'earlier runs of the same conversation'
            if self.effective_scope == 'conversation'
            else 'other runs persisted in the same store'
        )
        return (
            f'You can call `{SEARCH_TOOL_NAME}` to get exact details back from the persisted history: earlier '
            f'turns that were dropped from your context to save space, and {reach}. When something you need '
            '(a path, a value, a decision, an error message) is missing from the context or from a summary of '
            'it, search for it instead of guessing.'
        )

    @classmethod
    def combine(cls, capabilities: Sequence[AbstractCapability[Any]]) -> ConversationSearch:
        """One search per id: identical configurations become one; differing ones are an error.

        Raises:
            UserError: Naming the fields that differ (never their values, which may be secret).
        """
        first = capabilities[0]
        assert isinstance(first, ConversationSearch)
        differing: list[str] = []
        for other in capabilities[1:]:
            assert isinstance(other, ConversationSearch)
            for name in _COMPARED:
                if _field_value(first, name) != _field_value(other, name) and name not in differing:
                    differing.append(name)
        if differing:
            names = ', '.join(repr(name) for name in sorted(differing, key=_COMPARED.index))
            raise UserError(
                f'Capability id {first.id!r} is used by several ConversationSearch capabilities that disagree on '
                f'{names}. Make them agree, or give each its own `id` and wrap each in `PrefixTools` so their '
                'tools get distinct names.'
            )
        return first

    @durable_operation('search')
    async def search(self, ctx: RunContext[Any], request: SearchRequest) -> str:
        """Durable unit: one search, answered as a string (a DBOS step; inline in a Temporal activity).

        The scope is read from the run context (set by the application), never from the model.
        """
        return await self._engine.search(request, scope=self.effective_scope, conversation_id=ctx.conversation_id)


def _field_value(capability: ConversationSearch, name: str) -> object:
    if name == 'scope':
        return capability.effective_scope
    return getattr(capability, name)


def _check_int(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f'{name} must be an int, got {value!r}')
    if value < minimum:
        raise ValueError(f'{name} must be at least {minimum}, got {value!r}')
