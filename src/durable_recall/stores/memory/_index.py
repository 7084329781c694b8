"""The in-process store's half of the search index: the reference semantics of `IndexStorage`.

The SQL stores keep the same data in tables; this keeps it in dictionaries, guarded by the
store's lock, with every method doing what one SQL transaction does there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...index import (
    OPEN,
    SEAL_BYTES,
    IndexedRunRow,
    PostingsRow,
    RunCommit,
    ScopeStatus,
    StaleIndexError,
    appended_postings,
    seal_tail,
    without_run,
)

__all__ = ('MemoryIndex',)


@dataclass
class _Scope:
    key: int
    generation: str = field(default_factory=lambda: uuid.uuid4().hex)
    docs: int = 0
    length: int = 0


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
    _scopes: dict[str | None, _Scope] = field(default_factory=dict[str | None, _Scope])
    _runs: dict[str, IndexedRunRow] = field(default_factory=dict[str, IndexedRunRow])
    _terms: dict[tuple[str, int], dict[int, bytes]] = field(default_factory=dict[tuple[str, int], dict[int, bytes]])
    """(term, scope key) -> chunk number -> chunk, as in the SQL stores' `dr_index_postings`."""
    _hashes: dict[int, dict[bytes, int]] = field(default_factory=dict[int, dict[bytes, int]])
    _next_run_key: int = 1
    _generation: str = field(default_factory=lambda: uuid.uuid4().hex)

    def mark_pending(self, run_id: str, conversation_id: str | None, index: int) -> None:
        """Called by the store for every snapshot it saves."""
        self.pending[run_id] = (conversation_id or '', index)

    def forget(self, conversation_id: str, run_ids: Sequence[str]) -> None:
        """Called by the store when it deletes a conversation's runs."""
        for run_id in run_ids:
            self.pending.pop(run_id, None)
            self._runs.pop(run_id, None)
        scope = self._scopes.pop(conversation_id, None)
        if scope is not None:
            self._hashes.pop(scope.key, None)
            for term_scope in [key for key in self._terms if key[1] == scope.key]:
                del self._terms[term_scope]
        self._generation = uuid.uuid4().hex

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        if all_scopes:
            pending = list(self.pending)
            docs = sum(scope.docs for scope in self._scopes.values())
            length = sum(scope.length for scope in self._scopes.values())
            generation = self._generation
        else:
            pending = [run_id for run_id, (conv, _) in self.pending.items() if conv == (conversation_id or '')]
            scope = self._scopes.get(conversation_id)
            docs, length = (scope.docs, scope.length) if scope else (0, 0)
            generation = scope.generation if scope else ''
        return ScopeStatus(generation=generation, pending=self._sorted(pending), docs=docs, length=length)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, IndexedRunRow]:
        return {run_id: self._runs[run_id] for run_id in run_ids if run_id in self._runs}

    async def runs_by_key(self, run_keys: Sequence[int]) -> dict[int, IndexedRunRow]:
        wanted = set(run_keys)
        return {row.run_key: row for row in self._runs.values() if row.run_key in wanted}

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        key = None if all_scopes else self._key(conversation_id)
        if not all_scopes and key is None:
            return []
        rows = [row for row in self._runs.values() if key is None or row.scope_key == key]
        return [self._runs[run_id] for run_id in self._sorted([row.run_id for row in rows])]

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        keys = [scope.key for scope in self._scopes.values()] if all_scopes else [self._key(conversation_id)]
        found: dict[str, list[PostingsRow]] = {}
        for term in terms:
            rows = [
                PostingsRow(chunk=number, postings=data)
                for key in sorted(k for k in keys if k is not None)
                for number, data in sorted(self._terms.get((term, key), {}).items())
            ]
            if rows:
                found[term] = rows
        return found

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        key = self._key(conversation_id)
        if key is None:
            return set()
        row = self._runs.get(exclude_run_id)
        own = row.run_key if row else -1
        held = self._hashes.get(key, {})
        return {digest for digest in hashes if held.get(digest, own) != own}

    async def commit(self, change: RunCommit) -> None:
        await self.commit_many([change])

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        # Checked before anything is applied, and applied without a suspension point: atomic.
        live = [change for change in changes if self.run_order(change.run_id) is not None]
        for change in live:
            stored = self._runs.get(change.run_id)
            if (stored.seen if stored else -2) != change.expected_seen:
                raise StaleIndexError(change.run_id)
        for change in live:
            self._apply(change)

    def _apply(self, change: RunCommit) -> None:
        stored = self._runs.get(change.run_id)
        scope = self._scopes.get(change.conversation_id)
        if scope is None:
            key = 0 if change.conversation_id is None else 1 + max((s.key for s in self._scopes.values()), default=0)
            scope = self._scopes[change.conversation_id] = _Scope(key)
        if stored is None:
            run_key = self._next_run_key
            self._next_run_key += 1
        else:
            run_key = stored.run_key
        row = IndexedRunRow(
            run_key=run_key,
            run_id=change.run_id,
            scope_key=scope.key,
            seen=change.seen,
            first=change.first,
            lengths=change.lengths,
            seqs=change.seqs,
            roles=change.roles,
            times=change.times,
            state=change.state,
            started_at=change.started_at,
        )
        self._runs[change.run_id] = row
        self._put_postings(change, scope.key, run_key)
        if change.conversation_id is not None:
            held = self._hashes.setdefault(scope.key, {})
            for digest in change.hashes:
                held.setdefault(digest, run_key)
        scope.docs += change.docs_delta
        scope.length += change.length_delta
        scope.generation = uuid.uuid4().hex
        self._generation = uuid.uuid4().hex
        pending = self.pending.get(change.run_id)
        if pending is not None and pending[1] <= change.upto:
            del self.pending[change.run_id]

    def _put_postings(self, change: RunCommit, scope_key: int, run_key: int) -> None:
        """As the SQL stores: take out the run's `postings_set` terms, append to open tails, seal full ones."""
        for term in change.postings_set:
            chunks = self._terms.get((term, scope_key), {})
            for number, data in list(chunks.items()):
                kept = without_run(number, data, run_key)
                if kept is None:
                    continue
                if kept:
                    chunks[number] = kept
                else:
                    del chunks[number]
        for term, data in appended_postings(change, run_key):
            chunks = self._terms.setdefault((term, scope_key), {})
            chunks[OPEN] = chunks.get(OPEN, b'') + data
            if len(chunks[OPEN]) >= SEAL_BYTES:
                full = chunks.pop(OPEN)
                last = max(chunks, default=OPEN)
                for n, sealed in enumerate(seal_tail(full), start=1):
                    chunks[last + n] = sealed

    def _key(self, conversation_id: str | None) -> int | None:
        scope = self._scopes.get(conversation_id)
        return scope.key if scope else None

    def _sorted(self, run_ids: list[str]) -> list[str]:
        keyed = [(order, run_id) for run_id in run_ids if (order := self.run_order(run_id)) is not None]
        return [run_id for _, run_id in sorted(keyed)]
