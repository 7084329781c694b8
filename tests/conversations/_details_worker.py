"""A separate OS process that titles a shared conversation: `python -m tests.conversations._details_worker`.

Arguments: `<backend> <location> <schema or -> <conversation id> <name> <mode> <go file>`. The worker
reads the conversation's record, prints `ready`, waits for the go file (so the parent releases two
workers together), then titles the conversation `<name>` only if it has no title, and prints
`titled` or `conflict`. Mode `write_details` writes with the revision read before the go file (both
workers certainly check against the same state: the database's compare-and-set decides); mode
`update` calls `ConversationStore.update(..., expected_title=None)` as an agent titling it would.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from pydantic_ai.conversation_store import ConversationConflict

from tests.conversations._worker import _store


async def main(backend: str, location: str, schema: str, conversation_id: str, name: str, mode: str, go: str) -> None:
    store = _store(backend, location, schema)
    record = await store.read_record(conversation_id)
    assert record is not None and record.title is None
    print('ready', flush=True)
    while not Path(go).exists():
        time.sleep(0.002)
    try:
        if mode == 'write_details':
            await store.write_details(
                conversation_id, {'title': name}, expected_revision=record.revision, expected={'title': None}
            )
        else:
            await store.update(conversation_id, title=name, expected_title=None)
        print('titled', flush=True)
    except ConversationConflict:
        print('conflict', flush=True)
    finally:
        await store.aclose()  # type: ignore[attr-defined]


if __name__ == '__main__':
    backend, location, schema, conversation_id, name, mode, go = sys.argv[1:]
    asyncio.run(main(backend, location, schema, conversation_id, name, mode, go))
