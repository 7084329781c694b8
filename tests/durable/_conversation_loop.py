"""The durable conversation loop the engine tests run: load (a window) -> run -> save, turn after turn.

Each turn loads only the last `WINDOW` messages of the stored conversation, runs the recall script's
agent on them and saves the result. In the last turn the model searches the conversation store
(`ConversationStoreSource`) and quotes the answer: the detail from turn 1, which no window loaded
since, comes back from the store. `FlakyConversationStore` fails the write of a chosen save *after*
committing it, once: the engine retries the save (Temporal) or re-runs it on recovery (DBOS), and
the retry must recognise its own commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord, ConversationStore

from durable_recall import ConversationSearch, ConversationStoreSource
from durable_recall.conversations import DurableConversationStore, SqliteConversationStore
from durable_recall.errors import StoreUnavailableError

from ._recall_script import TURNS, recall_model

WINDOW = 4
"""Messages each turn loads: far fewer than the conversation holds by the last turn."""


class FlakyConversationStore(SqliteConversationStore):
    """A SQLite conversation store whose `fail_after_commit` saves (`(conversation id, n)`) fail once, committed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_after_commit: set[tuple[str, int]] = set()
        self.writes: dict[str, int] = {}

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        await super().write_record(record, new_entries=new_entries, expected_revision=expected_revision)
        cid = record.conversation_id
        self.writes[cid] = count = self.writes.get(cid, 0) + 1
        if (cid, count) in self.fail_after_commit:
            self.fail_after_commit.discard((cid, count))
            self.on_lost_answer(cid, count)
            raise StoreUnavailableError(f'the answer of save {count} of {cid!r} was lost (after its commit)')

    def on_lost_answer(self, conversation_id: str, count: int) -> None:
        """Called right after the commit whose answer is lost; the crash test ends the process here."""


def recall_agent(name: str, store: ConversationStore, durability: Any) -> Agent[None, str]:
    return Agent(
        recall_model(),
        name=name,
        capabilities=[ConversationSearch(ConversationStoreSource(store), scope='conversation'), durability],
    )


async def converse(
    conversations: DurableConversationStore, agent: Agent[None, str], conversation_id: str, turns: list[str] = TURNS
) -> list[str]:
    """One load -> run -> save per turn; returns the outputs."""
    outputs: list[str] = []
    for prompt in turns:
        conversation = await conversations.load(conversation_id, limit=WINDOW)
        conversation = conversation or Conversation(conversation_id=conversation_id)
        result = await agent.run(prompt, conversation=conversation)
        await conversations.save(result)
        outputs.append(result.output)
    return outputs


async def stored(store: ConversationStore, conversation_id: str) -> tuple[list[str], list[str], list[str]]:
    """The stored conversation: its entry ids, its messages' prompts and answers, and its branches."""
    record = await store.read_record(conversation_id)
    assert record is not None
    history = await store.read_history(record.head_id)
    parts = [str(getattr(part, 'content', '')) for entry in history for part in entry.message.parts]
    return [entry.id for entry in history], parts, list(record.branches)
