"""The searchable corpus of a scope: per-run indexed records, sections, statistics, ranking.

A run's record is tokenized once per record version and kept; a search only re-indexes runs whose
record changed since. Documents are messages. Ranking is an exact BM25 over the documents in
scope: `N`, the mean length and each query term's document frequency are computed from the
in-scope sections only, so a conversation's ranking never depends on other conversations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic_ai.messages import ModelMessage

from ..base import RunRecord
from ..history import RunHistory
from ..index import Bm25Params, idf, score_term, term_order
from ..text import Role, index_text, message_role, message_time, tokenize

__all__ = ('Filters', 'Hit', 'IndexedRun', 'Section', 'build_sections', 'rank_sections')


@dataclass(frozen=True)
class IndexedRun:
    """One run's record, tokenized.

    Attributes:
        run: The run.
        version: The record version this was built from.
        messages: The record.
        hashes: Canonical hash per message.
        lengths: Token count per message.
        postings: Term -> (position, term frequency) for every message containing it.
    """

    run: RunRecord
    version: int
    messages: Sequence[ModelMessage]
    hashes: Sequence[str]
    lengths: list[int]
    postings: dict[str, list[tuple[int, int]]] = field(repr=False)

    @classmethod
    def build(cls, history: RunHistory, skip_tools: Collection[str]) -> IndexedRun:
        """Tokenize every message of a record."""
        lengths: list[int] = []
        postings: dict[str, list[tuple[int, int]]] = {}
        for position, message in enumerate(history.messages):
            terms = tokenize(index_text(message, skip_tools=skip_tools))
            lengths.append(len(terms))
            for term, count in Counter(terms).items():
                postings.setdefault(term, []).append((position, count))
        return cls(history.run, history.version, history.messages, history.hashes, lengths, postings)


@dataclass(frozen=True)
class Section:
    """The part of a run's record that is searched under it.

    History a run inherited through `message_history` belongs to the run that persisted it
    first, so a section starts after the leading messages an earlier run in scope already holds.

    Attributes:
        indexed: The run.
        first: The record position the section starts at (displayed numbers are positions).
        order: The section's place in the corpus (runs oldest first), for stable tie order.
    """

    indexed: IndexedRun
    first: int
    order: int

    @property
    def size(self) -> int:
        """Messages in the section."""
        return len(self.indexed.messages) - self.first


def build_sections(runs: Sequence[IndexedRun], *, inherit: bool) -> list[Section]:
    """Sections for runs listed oldest first.

    A run's leading messages are inherited when an earlier run of the same conversation in the
    list holds the same message (by canonical hash) and the message was not created by this run
    (its `run_id` stamp, when present, is another run's). Only a leading stretch is inherited:
    once a message is this run's own, everything after it is too. A run without a conversation
    inherits nothing: `message_history` threads a conversation, and the persistent index computes
    the same sections conversation by conversation.

    Args:
        runs: The runs in scope, oldest first.
        inherit: `False` for a single-run search, which shows the whole record from position 0.
    """
    seen: dict[str, set[str]] = {}
    sections: list[Section] = []
    for indexed in runs:
        first = 0
        conversation = indexed.run.conversation_id
        if conversation is not None:
            held = seen.setdefault(conversation, set())
            if inherit:
                own_id = indexed.run.token
                while first < len(indexed.messages):
                    message = indexed.messages[first]
                    if indexed.hashes[first] not in held or message.run_id == own_id:
                        break
                    first += 1
            held.update(indexed.hashes)
        if first < len(indexed.messages):
            sections.append(Section(indexed, first, len(sections)))
    return sections


@dataclass(frozen=True)
class Hit:
    """A ranked message."""

    section: Section
    position: int
    score: float


@dataclass(frozen=True)
class Filters:
    """What the model may narrow a search by."""

    roles: frozenset[Role] | None = None
    since: datetime | None = None
    until: datetime | None = None

    def admits(self, message: ModelMessage, run: RunRecord) -> bool:
        """Whether a message passes every filter."""
        if self.roles is not None and message_role(message) not in self.roles:
            return False
        if self.since is None and self.until is None:
            return True
        moment = message_time(message, run.started_at)
        if self.since is not None and moment < self.since:
            return False
        return not (self.until is not None and moment > self.until)


def rank_sections(
    sections: Sequence[Section], terms: Sequence[str], params: Bm25Params, filters: Filters
) -> tuple[list[Hit], Mapping[str, float]]:
    """Exact BM25 over the sections' messages; returns hits best first, and each term's idf.

    Statistics (`N`, mean length, document frequencies) cover every message in the sections;
    filters only decide which messages may be returned. Ties keep corpus order.
    """
    n_docs = sum(section.size for section in sections)
    total_length = sum(sum(section.indexed.lengths[section.first :]) for section in sections)
    avgdl = total_length / n_docs if n_docs else 0.0
    rarity: dict[str, float] = {}
    found: list[tuple[str, float, list[tuple[Section, int, int]]]] = []
    for term in dict.fromkeys(terms):
        matches = [
            (section, position, tf)
            for section in sections
            for position, tf in section.indexed.postings.get(term, ())
            if position >= section.first
        ]
        term_idf = idf(n_docs, len(matches))
        rarity[term] = term_idf
        found.append((term, term_idf, matches))
    scores: dict[tuple[int, int], float] = {}
    # Added in one fixed term order, the persistent index's too, so both sum alike to the last bit.
    for _, term_idf, matches in sorted(found, key=lambda item: term_order(item[0], item[1])):
        for section, position, tf in matches:
            gain = score_term(tf, section.indexed.lengths[position], avgdl, term_idf, params)
            if gain > 0:
                key = (section.order, position)
                scores[key] = scores.get(key, 0.0) + gain
    hits = [
        Hit(sections[order], position, score)
        for (order, position), score in scores.items()
        if filters.admits(sections[order].indexed.messages[position], sections[order].indexed.run)
    ]
    hits.sort(key=lambda hit: (-hit.score, hit.section.order, hit.position))
    return hits, rarity
