"""`AutoRecall`: recall before the model asks, as a capability part added to the turn's prompt.

`ConversationSearch` waits for the model to notice that something is missing. When a turn starts
(a request holding a new user prompt), `AutoRecall` searches the history with the prompt (the same
engine, scope rules and ranking options as the tool) and adds the best excerpts that the model does
not already see, as a `durable_recall.recall` data part in that request. It adds nothing when no
match scores at least `min_score`.

The part is in the pending request, which every compaction keeps whole (`SlidingWindowCompaction`
and `ToolResultClearing` never cut the request about to be sent), so whatever order the
capabilities run in, the model sees it; it is then part of the persisted history like the prompt,
but parts of our namespace are never indexed (`text._capability`), so a recall never finds itself.

The search is a durable operation (`recall`), as the tool's `search` is: under Temporal an activity,
under DBOS a step, so a replay gets the recorded excerpt back and the part is identical.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.durable_operation import durable_operation
from pydantic_ai.embeddings import Embedder
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from ..history import HistorySource
from ..index import Bm25Params
from ..text import ENGLISH_STOPWORDS, check_stopwords, index_text
from ._embedding import Ranking, check_ranking
from ._engine import SearchEngine
from ._fusion import DEFAULT_WEIGHT
from ._hits import Hit
from ._request import SearchRequest, SearchScope
from ._withheld import skip_tools_for

__all__ = ('RECALL_KIND', 'AutoRecall')

RECALL_KIND = 'durable_recall.recall'
"""The kind of the part `AutoRecall` adds: compatibility data (stored in histories), pinned in a test."""

MAX_BYTES = 4000
"""The most an `AutoRecall` part may hold: it is added to every turn that finds something."""

_DEFAULTS = Bm25Params()


@dataclass
class AutoRecall(AbstractCapability[Any]):
    """Add the history's best excerpts for each new prompt to the request, before the model asks.

    Args:
        source: Where history is read from, as for `ConversationSearch`.
        scope: `'conversation'` (the default) or `'all'`, with `ConversationSearch`'s rules.
        max_bytes: The most UTF-8 bytes the added part holds (1,000 to 4,000). The default, 4,000,
            and `max_matches`' 7 showed the most evidence on long chats (measured: `docs/autorecall.md`).
        max_matches: The most matches it shows.
        context_lines: Messages around each match it may show (within `max_bytes`).
        min_score: Matches scoring below it are not shown; with none left, nothing is added.
        ranking: As for `ConversationSearch`.
        embedder: As for `ConversationSearch`.
        hybrid_weight: As for `ConversationSearch`.
        bm25_k1: As for `ConversationSearch`.
        bm25_b: As for `ConversationSearch`.
        stopwords: As for `ConversationSearch` (the prompt is searched without them).
        neighbour_weights: As for `ConversationSearch`.
        id: The capability's id, which names its durable operation (`<id>__recall` under Temporal):
            compatibility data for running workflows; give each `AutoRecall` of an agent its own.

    Raises:
        PydanticAIVersionError: pydantic-ai has no capability parts (before 2.78).
        TypeError, ValueError: A bad argument, named.
    """

    source: HistorySource
    _: KW_ONLY
    scope: SearchScope = 'conversation'
    max_bytes: int = 4000
    max_matches: int = 7
    context_lines: int = 1
    min_score: float = 2.0
    ranking: Ranking = 'bm25'
    embedder: Embedder | None = None
    hybrid_weight: float = DEFAULT_WEIGHT
    bm25_k1: float = _DEFAULTS.k1
    bm25_b: float = _DEFAULTS.b
    stopwords: Collection[str] = ENGLISH_STOPWORDS
    neighbour_weights: Sequence[float] = _DEFAULTS.neighbours
    id: str | None = 'auto_recall'
    _engine: SearchEngine = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from ._recall_part import recall_part_class

        recall_part_class()  # raises PydanticAIVersionError before 2.78
        if self.scope not in ('conversation', 'all'):
            raise ValueError(f"scope must be 'conversation' or 'all', got {self.scope!r}")
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'max_bytes must be an int, got {self.max_bytes!r}')
        if not 1000 <= self.max_bytes <= MAX_BYTES:
            raise ValueError(f'max_bytes must be from 1000 to {MAX_BYTES}, got {self.max_bytes!r}')
        for name in ('max_matches', 'context_lines'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == 'max_matches' else 0):
                raise ValueError(
                    f'{name} must be an int of at least {1 if name == "max_matches" else 0}, got {value!r}'
                )
        number = isinstance(self.min_score, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
        if isinstance(self.min_score, bool) or not number or self.min_score < 0:
            raise ValueError(f'min_score must be a number of at least 0, got {self.min_score!r}')
        check_ranking(self.ranking, self.embedder, self.hybrid_weight)
        self._engine = SearchEngine(
            source=self.source,
            params=Bm25Params(k1=self.bm25_k1, b=self.bm25_b, neighbours=self.neighbour_weights),
            max_matches=self.max_matches,
            context_lines=self.context_lines,
            max_result_bytes=self.max_bytes,
            skip_tools=skip_tools_for(None, {}),
            ranking=self.ranking,
            embedder=self.embedder,
            hybrid_weight=float(self.hybrid_weight),
            stopwords=check_stopwords(self.stopwords),
        )

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """At a turn's start, add the recall part to the pending request (once: a retry finds it there)."""
        if not ctx.messages or not isinstance(ctx.messages[-1], ModelRequest):
            return request_context
        pending = ctx.messages[-1]
        prompt = _prompt(pending)
        if prompt is None or any(getattr(part, 'kind', None) == RECALL_KIND for part in pending.parts):
            return request_context
        text = await self.recall(ctx, prompt, _view(ctx.messages))  # the prompt itself included: persisted already
        if not text:
            return request_context
        from ._recall_part import recall_part

        updated = replace(pending, parts=[*pending.parts, recall_part(text)])
        ctx.messages[-1] = updated
        if request_context.messages and request_context.messages[-1] is pending:
            request_context.messages[-1] = updated
        elif request_context.messages and isinstance(request_context.messages[-1], ModelRequest):
            last = request_context.messages[-1]
            request_context.messages[-1] = replace(last, parts=[*last.parts, recall_part(text)])
        return request_context

    @durable_operation('recall')
    async def recall(self, ctx: RunContext[Any], prompt: str, seen: list[str]) -> str:
        """Durable unit: the excerpts for `prompt` that `seen` (the texts the model sees) does not hold, or `''`."""
        in_view = set(seen)

        def keep(hit: Hit) -> bool:
            return hit.score >= self.min_score and index_text(hit.message) not in in_view

        outcome = await self._engine.rank(
            SearchRequest(query=prompt), scope=self.scope, conversation_id=ctx.conversation_id, keep=keep
        )
        if outcome.fixed is not None or not outcome.blocks:
            return ''
        return outcome.answer(self.max_bytes)


def _prompt(request: ModelRequest) -> str | None:
    """The new user prompt's text in a request (`None`: not a turn's start, or no text)."""
    texts = [
        part.content
        for part in request.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str) and part.content.strip()
    ]
    return '\n'.join(texts) if texts else None


def _view(messages: Sequence[ModelMessage]) -> list[str]:
    """The searchable text of each message the model sees, the pending prompt among them."""
    return [text for text in map(index_text, messages) if text]
