"""Writing rare words' grouped open tails (`_groups`) inside a commit's transaction.

`PostgresIndexWriter` hands this the appends its terms' own tail rows did not take; this merges
them into their groups, moves a tail that outgrew `GROUP_TAIL_BYTES` out to a row of its own
(returned to the caller, which inserts it), and doubles a scope's buckets when a group outgrew
`GROUP_BYTES`. A group row that does not unpack is left as it is (a search names it, and
`durable-recall check --rebuild-index` repairs it); the appends of its bucket go to rows of their
own, so nothing new is lost to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, LiteralString

from ._groups import GROUP_BYTES, GROUP_TAIL_BYTES, MAX_GROUP_BITS, bucket_of, pack_group, term_hash, unpack_group

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

    from ._index_writer import IndexDatabase

__all__ = ('GroupWriter',)

_READ: LiteralString = (
    'SELECT g.scope_key, g.bucket, g.terms FROM {index_groups} AS g'
    ' JOIN unnest(%s::bigint[], %s::int[]) AS d (scope_key, bucket)'
    ' ON g.scope_key = d.scope_key AND g.bucket = d.bucket'
)
_WRITE: LiteralString = (
    'INSERT INTO {index_groups} AS g (scope_key, bucket, terms)'
    ' SELECT * FROM unnest(%s::bigint[], %s::int[], %s::bytea[])'
    ' ON CONFLICT (scope_key, bucket) DO UPDATE SET terms = EXCLUDED.terms'
)
_DELETE: LiteralString = (
    'DELETE FROM {index_groups} AS g USING unnest(%s::bigint[], %s::int[]) AS d (scope_key, bucket)'
    ' WHERE g.scope_key = d.scope_key AND g.bucket = d.bucket'
)

_Key = tuple[int, int]
"""A group's `(scope key, bucket)`."""


class GroupWriter:
    """The groups of a commit's scopes, read and written through the commit's cursor."""

    def __init__(self, cur: AsyncCursor[TupleRow], db: IndexDatabase) -> None:
        self._cur = cur
        self._sql = db.sql
        self.bits: dict[int, int] = {}
        """Each scope's `group_bits`, as `update_scope` returned it (or read here when it did not)."""
        self.known: dict[_Key, dict[str, bytes] | None] | None = None
        """Groups a commit read ahead (`_commit_state`): every group its appends can touch, the
        missing ones not existing; dropped at the first write, after which groups are read again."""
        self.deferred: dict[_Key, bytes] | None = None
        """Where writes of groups go instead of the server, when set (the commit's one write statement),
        until a doubling, which reads every group of its scope, sends them first."""

    async def _bits_of(self, scope_key: int) -> int:
        if scope_key not in self.bits:
            await self._cur.execute(
                self._sql('SELECT group_bits FROM {index_scopes} WHERE scope_key = %s'), (scope_key,)
            )
            row = await self._cur.fetchone()
            self.bits[scope_key] = 0 if row is None else row[0]
        return self.bits[scope_key]

    async def _read(self, keys: Sequence[_Key]) -> dict[_Key, dict[str, bytes] | None]:
        """The groups at `keys` that exist, unpacked (`None` for one that does not unpack)."""
        if not keys:
            return {}
        if self.known is not None:
            known = self.known
            return {key: None if (group := known[key]) is None else dict(group) for key in keys if key in known}
        await self._cur.execute(self._sql(_READ), ([scope for scope, _ in keys], [bucket for _, bucket in keys]))
        found: dict[_Key, dict[str, bytes] | None] = {}
        for scope_key, bucket, data in await self._cur.fetchall():
            try:
                found[scope_key, bucket] = unpack_group(bytes(data))
            except ValueError:
                found[scope_key, bucket] = None
        return found

    async def tails(self, scope_key: int, terms: Sequence[str]) -> dict[str, bytes]:
        """The grouped tails of these terms in the scope (none from a group that does not unpack)."""
        bits = await self._bits_of(scope_key)
        wanted = {term: bucket_of(term, bits) for term in terms}
        groups = await self._read(sorted({(scope_key, bucket) for bucket in wanted.values()}))
        out: dict[str, bytes] = {}
        for term, bucket in wanted.items():
            group = groups.get((scope_key, bucket))
            if group is not None and term in group:
                out[term] = group[term]
        return out

    async def replace(self, scope_key: int, term: str, tail: bytes) -> None:
        """Set a grouped term's tail (`b''` takes the term out of its group)."""
        key = (scope_key, bucket_of(term, await self._bits_of(scope_key)))
        group = (await self._read([key])).get(key)
        if group is None or term not in group:
            return
        if tail:
            group[term] = tail
        else:
            del group[term]
        await self._store({key: pack_group(group)})

    async def append(self, appends: Sequence[tuple[int, str, bytes]]) -> list[tuple[int, str, bytes]]:
        """Append to grouped tails (creating them); the tails that must move to rows of their own.

        Args:
            appends: `(scope key, term, postings)` of terms that have no row of their own.

        Returns:
            `(scope key, term, whole tail)` of the tails over `GROUP_TAIL_BYTES` (taken out of their
            groups) and of the appends whose group does not unpack: the caller inserts them as rows.
        """
        placed: dict[_Key, list[tuple[str, bytes]]] = {}
        for scope_key, term, data in appends:
            key = (scope_key, bucket_of(term, await self._bits_of(scope_key)))
            placed.setdefault(key, []).append((term, data))
        groups = await self._read(sorted(placed))
        own: list[tuple[int, str, bytes]] = []
        changed: dict[_Key, bytes] = {}
        for key, entries in placed.items():
            group = groups.get(key, {})
            if group is None:
                own.extend((key[0], term, data) for term, data in entries)
                continue
            for term, data in entries:
                tail = group.get(term, b'') + data
                if len(tail) > GROUP_TAIL_BYTES:
                    group.pop(term, None)
                    own.append((key[0], term, tail))
                else:
                    group[term] = tail
            changed[key] = pack_group(group)
        await self._store(changed)
        crowded = {scope for (scope, _), data in changed.items() if len(data) > GROUP_BYTES}
        for scope_key in sorted(crowded):
            await self._double(scope_key)
        return own

    async def _store(self, groups: dict[_Key, bytes]) -> None:
        """Write these packed groups whole; an empty one is deleted."""
        self.known = None
        if self.deferred is not None:
            self.deferred.update(groups)
            return
        kept = sorted((key, data) for key, data in groups.items() if data)
        emptied = sorted(key for key, data in groups.items() if not data)
        if kept:
            await self._cur.execute(
                self._sql(_WRITE),
                ([s for (s, _), _ in kept], [b for (_, b), _ in kept], [data for _, data in kept]),
            )
        if emptied:
            await self._cur.execute(self._sql(_DELETE), ([s for s, _ in emptied], [b for _, b in emptied]))

    async def _double(self, scope_key: int) -> None:
        """Spread the scope's grouped tails over twice the buckets (or more) until no group outgrows `GROUP_BYTES`.

        Not while a group of the scope does not unpack: its terms would move to buckets no read
        would find it from, and the search would stop naming the damage for them. The groups then
        grow past `GROUP_BYTES` until the index is rebuilt.
        """
        bits = await self._bits_of(scope_key)
        if bits >= MAX_GROUP_BITS:
            return
        deferred, self.deferred = self.deferred, None
        if deferred:
            pending = dict(deferred)
            deferred.clear()  # the commit's write statement must not write them again
            await self._store(pending)
        await self._cur.execute(
            self._sql('SELECT bucket, terms FROM {index_groups} WHERE scope_key = %s'), (scope_key,)
        )
        tails: dict[str, bytes] = {}
        buckets: list[int] = []
        for bucket, data in await self._cur.fetchall():
            try:
                tails.update(unpack_group(bytes(data)))
            except ValueError:
                return
            buckets.append(bucket)
        hashes = {term: term_hash(term) for term in tails}
        spread: dict[int, bytes] = {}
        while bits < MAX_GROUP_BITS:
            bits += 1
            mask = (1 << bits) - 1
            groups: dict[int, dict[str, bytes]] = {}
            for term, tail in tails.items():
                groups.setdefault(hashes[term] & mask, {})[term] = tail
            spread = {bucket: pack_group(group) for bucket, group in groups.items()}
            if all(len(data) <= GROUP_BYTES for data in spread.values()):
                break
        # A bucket keeps its number under more bits (its low bits) and its row is updated in place,
        # which Postgres can do on the row's own page; only the tails that move make new rows.
        await self._store({(scope_key, bucket): b'' for bucket in buckets if bucket not in spread})
        await self._store({(scope_key, bucket): data for bucket, data in spread.items()})
        await self._cur.execute(
            self._sql('UPDATE {index_scopes} SET group_bits = %s WHERE scope_key = %s'), (bits, scope_key)
        )
        self.bits[scope_key] = bits
