"""Catch-ups to commit to a store's `IndexStorage`, and the postings it holds as plain tuples."""

from __future__ import annotations

from collections.abc import Sequence

from durable_recall.base._time import format_timestamp
from durable_recall.index import IndexStorage, PostingsRow, RunCommit
from durable_recall.index._chunks import decode_chunk
from durable_recall.index._layout import ROLE_CODES, encode_floats, encode_ints
from durable_recall.index._storage import Posting
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._helpers import messages, registration, save_history


def postings(*pairs: tuple[int, int]) -> list[Posting]:
    """Postings of `(position, tf)` pairs, each document 10 tokens long."""
    return [(position, tf, 10) for position, tf in pairs]


def view(found: dict[str, list[PostingsRow]]) -> dict[str, list[tuple[int, int, int]]]:
    """Each term's postings as sorted `(run key, position, tf)`, whatever chunks hold them."""
    return {
        term: sorted(
            (key >> 32, key & 0xFFFFFFFF, tf)
            for row in rows
            for key, tf, _ in decode_chunk(row.chunk, row.postings).entries()
        )
        for term, rows in found.items()
    }


async def change(
    store: StepStore,
    run_id: str,
    *,
    expected_seen: int = -2,
    seen: int = 0,
    upto: int | None = None,
    lengths: Sequence[int] = (3,),
    postings_add: dict[str, list[Posting]] | None = None,
    postings_set: dict[str, list[Posting]] | None = None,
    hashes: Sequence[bytes] = (),
    docs_delta: int = 1,
    length_delta: int = 3,
) -> RunCommit:
    """A catch-up of a registered run; its per-position arrays follow `lengths`."""
    record = await store.get_run(run_id)
    assert record is not None
    return RunCommit(
        run_id=run_id,
        conversation_id=record.conversation_id,
        started_at=format_timestamp(record.started_at),
        expected_seen=expected_seen,
        seen=seen,
        upto=seen if upto is None else upto,
        first=0,
        lengths=encode_ints(lengths),
        seqs=encode_ints(range(len(lengths))),
        roles=encode_ints(ROLE_CODES['user'] for _ in lengths),
        times=encode_floats([1.5] * len(lengths)),
        state=f'{{"seen": {seen}}}'.encode(),
        postings_add=postings_add or {},
        postings_set=postings_set or {},
        hashes=hashes,
        docs_delta=docs_delta,
        length_delta=length_delta,
    )


async def started(store: StepStore, run_id: str, conversation_id: str | None, snapshots: int = 1) -> None:
    """Register a run and save `snapshots` snapshots of it."""
    await store.register_run(registration(run_id, conversation_id=conversation_id))
    await save_history(store, run_id, [messages(*range(n + 1)) for n in range(snapshots)])


async def pending(index: IndexStorage, conversation_id: str | None = None, *, all_scopes: bool = False) -> list[str]:
    """The runs of a scope (or of all scopes) the index has yet to catch up on, oldest first."""
    return (await index.status(conversation_id, all_scopes=all_scopes)).pending


def is_sql(kit: StoreKit) -> bool:
    """Whether the kit's store keeps its index in SQL tables a test can query."""
    return kit.sqlite_path is not None or kit.postgres_url is not None
