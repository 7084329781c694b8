"""What one ranking asks for, and what it gives back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..index import Bm25Params
from ._hits import Candidate
from ._request import Filters

__all__ = ('Ask', 'Ranked')


@dataclass(frozen=True, kw_only=True)
class Ask:
    """What one ranking asks for.

    Attributes:
        terms: The query's distinct terms.
        params: BM25 parameters.
        filters: Roles and times the candidates must have (statistics still cover the scope).
        conversation_id: The scope's conversation (ignored with `all_scopes`).
        all_scopes: The whole store.
        run_id: Rank one run's whole record instead.
        limit: Only the best this many candidates (`None`: all).
        similarity: For hybrid ranking, the query's similarity to each of the scope's documents
            that has a vector (`run_key << 32 | position`), fused with BM25 (`_fusion`).
        weight: The similarity side's share in fusion.
        count: Count every matching document exactly (`Ranked.matched`): scores every match instead of
            pruning to the best `limit` (the CLI's "N of M matches"; the tool does not ask).
    """

    terms: Sequence[str]
    params: Bm25Params
    filters: Filters
    conversation_id: str | None
    all_scopes: bool
    run_id: str | None = None
    limit: int | None = None
    similarity: Mapping[int, float] | None = None
    weight: float = 0.5
    count: bool = False


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """The scored matches of one search, before windows and excerpts.

    Attributes:
        total: Documents searched.
        candidates: Best first (ties in corpus order).
        rarity: Each query term's idf.
        known_run: For a `run_id` search, whether the scope holds the run.
        matched: With `Ask.count`, how many documents matched (after filters and fusion); else `None`.
    """

    total: int
    candidates: list[Candidate]
    rarity: Mapping[str, float]
    known_run: bool = True
    matched: int | None = None
