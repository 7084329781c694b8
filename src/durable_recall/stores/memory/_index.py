"""The in-process store's half of the search index: the reference semantics of `IndexStorage`.

The SQL stores keep the same data in tables; this keeps it in dictionaries keyed as their rows
are. A commit is the index layer's [`apply_commits`][durable_recall.index.apply_commits] over a
port whose methods never suspend, run inline: no other task runs between its checks and its
writes, which is what one SQL transaction gives there.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...index import (
    OPEN,
    FullTail,
    IndexedRunRow,
    PostingsRow,
    RunCommit,
    ScopeSpans,
    ScopeStatus,
    StoredRun,
    TermChunk,
    apply_commits,
    run_inline,
)

__all__ = ('MemoryIndex',)


def _new_generation() -> str:
    return uuid.uuid4().hex


_RUN_KEYS = itertools.count(1)
"""Run keys for every in-memory index of the process: a run registered anew (in this index or a new
one that replaced it) never gets a key an earlier run had, so what a reader cached by key can never
be shown for another run's content."""


@dataclass
class _Scope:
    key: int
    generation: str = field(default_factory=_new_generation)
    docs: int = 0
    length: int = 0


@dataclass
class _Tables:
    """The index tables, as the SQL stores' `dr_index_*` rows keyed by their primary keys."""

    scopes: dict[str | None, _Scope] = field(default_factory=dict[str | None, _Scope])
    runs: dict[str, IndexedRunRow] = field(default_factory=dict[str, IndexedRunRow])
    postings: dict[tuple[str, int], dict[int, bytes]] = field(default_factory=dict[tuple[str, int], dict[int, bytes]])
    """(term, scope key) -> chunk number -> chunk."""
    hashes: dict[int, dict[bytes, int]] = field(default_factory=dict[int, dict[bytes, int]])
    """scope key -> hash -> the run key that first held it."""
    generation: str = field(default_factory=_new_generation)


@dataclass
class MemoryIndex:
    """Index tables as dictionaries.

    Args:
        run_order: Gives a run id's `(started_at, run_id)` sort key, or `None` when the store no
            longer has the run.
    """

    run_order: Callable[[str], tuple[str, str] | None]
    pending: dict[str, tuple[str, int]] = field(default_factory=dict[str, tuple[str, int]])
    """run id -> (conversation key text, last snapshot index saved)."""
    _tables: _Tables = field(default_factory=_Tables)
    _saved: dict[str, tuple[str, int]] = field(default_factory=dict[str, tuple[str, int]])
    """Every run with snapshots, as `pending` would mark it: what `rebuild` marks again."""

    def mark_pending(self, run_id: str, conversation_id: str | None, index: int) -> None:
        """Called by the store for every snapshot it saves."""
        self.pending[run_id] = self._saved[run_id] = (conversation_id or '', index)

    def forget(self, conversation_id: str, run_ids: Sequence[str]) -> None:
        """Called by the store when it deletes a conversation's runs."""
        tables = self._tables
        for run_id in run_ids:
            self.pending.pop(run_id, None)
            self._saved.pop(run_id, None)
            tables.runs.pop(run_id, None)
        scope = tables.scopes.pop(conversation_id, None)
        if scope is not None:
            tables.hashes.pop(scope.key, None)
            for term_scope in [key for key in tables.postings if key[1] == scope.key]:
                del tables.postings[term_scope]
        tables.generation = _new_generation()

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        scopes = self._tables.scopes
        if all_scopes:
            pending = list(self.pending)
            docs = sum(scope.docs for scope in scopes.values())
            length = sum(scope.length for scope in scopes.values())
            generation = self._tables.generation
        else:
            pending = [run_id for run_id, (conv, _) in self.pending.items() if conv == (conversation_id or '')]
            scope = scopes.get(conversation_id)
            docs, length = (scope.docs, scope.length) if scope else (0, 0)
            generation = scope.generation if scope else ''
        return ScopeStatus(generation=generation, pending=self._sorted(pending), docs=docs, length=length)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, IndexedRunRow]:
        runs = self._tables.runs
        return {run_id: runs[run_id] for run_id in run_ids if run_id in runs}

    async def runs_by_key(self, run_keys: Sequence[int]) -> dict[int, IndexedRunRow]:
        wanted = set(run_keys)
        return {row.run_key: row for row in self._tables.runs.values() if row.run_key in wanted}

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        key = None if all_scopes else self._key(conversation_id)
        if not all_scopes and key is None:
            return []
        runs = self._tables.runs
        rows = [row for row in runs.values() if key is None or row.scope_key == key]
        return [runs[run_id] for run_id in self._sorted([row.run_id for row in rows])]

    async def scope_spans(self, conversation_id: str | None) -> ScopeSpans:
        rows = await self.scope_runs(conversation_id, all_scopes=False)
        return ScopeSpans(
            run_keys=[row.run_key for row in rows],
            firsts=[row.first for row in rows],
            lengths=[row.lengths for row in rows],
        )

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        scopes = self._tables.scopes
        keys = [scope.key for scope in scopes.values()] if all_scopes else [self._key(conversation_id)]
        found: dict[str, list[PostingsRow]] = {}
        for term in terms:
            rows = [
                PostingsRow(chunk=number, postings=data)
                for key in sorted(k for k in keys if k is not None)
                for number, data in sorted(self._tables.postings.get((term, key), {}).items())
            ]
            if rows:
                found[term] = rows
        return found

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        key = self._key(conversation_id)
        if key is None:
            return set()
        row = self._tables.runs.get(exclude_run_id)
        own = row.run_key if row else -1
        held = self._tables.hashes.get(key, {})
        return {digest for digest in hashes if held.get(digest, own) != own}

    async def terms(self, conversation_id: str | None, *, all_scopes: bool) -> list[str]:
        key = None if all_scopes else self._key(conversation_id)
        if not all_scopes and key is None:
            return []
        return sorted({term for term, scope_key in self._tables.postings if key is None or scope_key == key})

    async def rebuild(self) -> int:
        self._tables = _Tables()
        self.pending.clear()
        self.pending.update((run_id, mark) for run_id, mark in self._saved.items() if self.run_order(run_id))
        return len(self.pending)

    async def commit(self, change: RunCommit) -> None:
        await self.commit_many([change])

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        run_inline(apply_commits(_Writer(self._tables, self.pending, self.run_order), changes))

    def _key(self, conversation_id: str | None) -> int | None:
        scope = self._tables.scopes.get(conversation_id)
        return scope.key if scope else None

    def _sorted(self, run_ids: list[str]) -> list[str]:
        keyed = [(order, run_id) for run_id in run_ids if (order := self.run_order(run_id)) is not None]
        return [run_id for _, run_id in sorted(keyed)]


class _Writer:
    """`IndexWriter` over the dictionaries; no method suspends (see the module docstring)."""

    def __init__(
        self,
        tables: _Tables,
        pending: dict[str, tuple[str, int]],
        run_order: Callable[[str], tuple[str, str] | None],
    ) -> None:
        self._tables = tables
        self._pending = pending
        self._run_order = run_order

    async def stored_run(self, run_id: str) -> StoredRun | None:
        if self._run_order(run_id) is None:
            return None
        row = self._tables.runs.get(run_id)
        mark = self._pending.get(run_id)
        # Marks are keyed by run id alone here; the conversation is only what the mark records.
        return StoredRun(
            conversation_id=None if mark is None else mark[0] or None,
            run_key=None if row is None else row.run_key,
            seen=None if row is None else row.seen,
        )

    async def update_scope(self, conversation_id: str | None, *, docs: int, length: int, generation: str) -> int:
        scopes = self._tables.scopes
        scope = scopes.get(conversation_id)
        if scope is None:
            key = 0 if conversation_id is None else 1 + max((s.key for s in scopes.values()), default=0)
            scope = scopes[conversation_id] = _Scope(key)
        scope.docs += docs
        scope.length += length
        scope.generation = generation
        return scope.key

    async def put_run(self, change: RunCommit, scope_key: int, run_key: int | None) -> int:
        if run_key is None:
            run_key = next(_RUN_KEYS)
        self._tables.runs[change.run_id] = IndexedRunRow(
            run_key=run_key,
            run_id=change.run_id,
            scope_key=scope_key,
            seen=change.seen,
            first=change.first,
            lengths=change.lengths,
            seqs=change.seqs,
            roles=change.roles,
            times=change.times,
            state=change.state,
            started_at=change.started_at,
        )
        return run_key

    async def chunks(self, scope_key: int, terms: Sequence[str]) -> list[TermChunk]:
        postings = self._tables.postings
        return [
            TermChunk(term, number, data)
            for term in terms
            for number, data in sorted(postings.get((term, scope_key), {}).items())
        ]

    async def set_chunk(self, scope_key: int, term: str, chunk: int, postings: bytes) -> None:
        self._tables.postings[term, scope_key][chunk] = postings

    async def delete_chunk(self, scope_key: int, term: str, chunk: int) -> None:
        chunks = self._tables.postings[term, scope_key]
        del chunks[chunk]
        if not chunks:
            del self._tables.postings[term, scope_key]

    async def append_tails(self, tails: Sequence[tuple[int, str, bytes]], *, full_at: int) -> list[FullTail]:
        full: list[FullTail] = []
        for scope_key, term, data in tails:
            chunks = self._tables.postings.setdefault((term, scope_key), {})
            tail = chunks[OPEN] = chunks.get(OPEN, b'') + data
            if len(tail) >= full_at:
                full.append(FullTail(scope_key, term, tail, max(chunks)))
        return full

    async def seal_tails(self, sealed: Sequence[tuple[int, str, int, bytes]], tails: Sequence[tuple[int, str]]) -> None:
        postings = self._tables.postings
        for scope_key, term, chunk, data in sealed:
            postings[term, scope_key][chunk] = data
        for scope_key, term in tails:
            del postings[term, scope_key][OPEN]

    async def add_hashes(self, scope_key: int, run_key: int, hashes: Sequence[bytes]) -> None:
        held = self._tables.hashes.setdefault(scope_key, {})
        for digest in hashes:
            held.setdefault(digest, run_key)

    async def clear_pending(self, conversation_id: str | None, run_id: str, upto: int) -> None:
        mark = self._pending.get(run_id)
        if mark is not None and mark[1] <= upto:
            del self._pending[run_id]

    async def bump_generation(self, generation: str) -> None:
        self._tables.generation = generation
