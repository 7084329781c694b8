"""`DurableConversationStore`: a `ConversationStore` whose `load` and `save` are durable units in workflow code.

The pattern pydantic-ai documents for a conversation store is

    conversation = await store.load(conversation_id) or Conversation(conversation_id=conversation_id)
    result = await agent.run(prompt, conversation=conversation)
    await store.save(result)

Inside a Temporal workflow or a DBOS workflow function, the first and last lines are I/O in workflow
code: not journaled, so a replay reads the store again (and may see another history), and a save
retried after a crash conflicts with its own commit. A durability capability cannot help: outside an
agent run there is no run context, so a `@durable_operation` runs inline.

So the engine wrappers (`durable_recall.temporal.TemporalConversationStore`,
`durable_recall.dbos.DBOSConversationStore`) subclass this class: in workflow code `load`, `save` and
`update` (a conversation's title and metadata, pydantic-ai-slim>=2.78) run as one activity or step
each, under stable names built from the wrapper's `name`, and `save` is
[`idempotent_save`][durable_recall.conversations.idempotent_save] keyed by the agent run's id, which
the durability capabilities keep stable across replay and recovery. Everywhere else (activities,
steps, plain code) every method is the wrapped store's. The other `ConversationStore` methods
(`branch`, `fork`, `delete`, listing) refuse to run in workflow code rather than do I/O there.

This module knows no engine: a subclass says whether the caller is workflow code and how to run the
three operations durably.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai._utils import UNSET, Unset
from pydantic_ai.conversation import Conversation
from pydantic_ai.exceptions import UserError
from pydantic_ai.run import AgentRunResult

from ..base import WorkflowCodeIOError
from ._api import ConversationConflict, ConversationEntry, ConversationRecord, ConversationStore
from ._durable_update import UpdateConversation, UpdatedConversation, expected_keyword, require_update
from ._idempotent import ConversationSaved, idempotent_save

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationDetails

__all__ = (
    'DurableConversationStore',
    'LoadConversation',
    'LoadedConversation',
    'SaveConversation',
    'UpdateConversation',
    'UpdatedConversation',
)

_NAME = re.compile(r'[A-Za-z0-9_\-]{1,100}')


@dataclass(frozen=True)
class LoadConversation:
    """The input of the durable `load`: what `ConversationStore.load` takes."""

    conversation_id: str
    limit: int | None = None
    scope: str | None = None


@dataclass(frozen=True)
class LoadedConversation:
    """The output of the durable `load`: the conversation, or `None` when the store does not have it."""

    conversation: Conversation | None


@dataclass(frozen=True)
class SaveConversation:
    """The input of the durable `save`: the conversation, the save id its ids derive from, and the scope."""

    conversation: Conversation
    save_id: str
    scope: str | None = None


class DurableConversationStore(ConversationStore, ABC):
    """A conversation store whose `load` and `save` run as durable units when called from workflow code.

    Args:
        store: The store to read and write (`SqliteConversationStore`, `PostgresConversationStore`,
            pydantic-ai's `InMemoryConversationStore`, ...). Workers and workflow code share it.
        name: Names the durable units (see the subclass); compatibility data, like an agent's
            `name`: renaming it strands workflows in flight. Letters, digits, `_` and `-`.

    Raises:
        TypeError: `store` is not a `ConversationStore`.
        UserError: `name` is empty or holds other characters.
    """

    def __init__(self, store: ConversationStore, *, name: str) -> None:
        if not isinstance(store, ConversationStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f'{type(self).__name__} wraps a pydantic-ai ConversationStore, got {type(store).__name__}: use '
                'SqliteConversationStore, PostgresConversationStore or InMemoryConversationStore.'
            )
        if isinstance(store, DurableConversationStore):
            raise TypeError(f'{type(self).__name__} wraps the store itself, not another durable wrapper ({store!r}).')
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f'{type(self).__name__} name must be 1 to 100 letters, digits, `_` or `-`, got {name!r}: it is '
                'part of the durable operation names.'
            )
        self._store = store
        self._name = name

    @property
    def wrapped(self) -> ConversationStore:
        """The store that does the I/O."""
        return self._store

    @property
    def name(self) -> str:
        """The name the durable operations carry."""
        return self._name

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self._store!r}, name={self._name!r})'

    # --- What an engine subclass provides -------------------------------------------------------------

    @abstractmethod
    def in_workflow_code(self) -> bool:
        """Whether the caller is workflow code, where I/O must go through a durable unit."""

    @abstractmethod
    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        """Run `load_operation(request)` as the engine's durable unit and return its (recorded) result."""

    @abstractmethod
    async def _save_durably(self, request: SaveConversation) -> ConversationSaved:
        """Run `save_operation(request)` as the engine's durable unit and return its (recorded) result."""

    async def _update_durably(self, request: UpdateConversation) -> UpdatedConversation:
        """Run `update_operation(request)` as the engine's durable unit and return its (recorded) result.

        Not abstract, so a subclass written before `update` existed still builds; it refuses instead
        of writing from workflow code.
        """
        raise NotImplementedError(
            f'{type(self).__name__} runs no durable `update`: it does not override _update_durably.'
        )

    # --- The bodies of the durable units ----------------------------------------------------------------

    async def load_operation(self, request: LoadConversation) -> LoadedConversation:
        """The durable `load`'s body: the wrapped store's `load`. Read-only, so any retry is safe."""
        conversation = await self._store.load(request.conversation_id, limit=request.limit, scope=request.scope)
        return LoadedConversation(conversation)

    async def save_operation(self, request: SaveConversation) -> ConversationSaved:
        """The durable `save`'s body: `idempotent_save`, so a retry after a lost answer succeeds."""
        return await idempotent_save(self._store, request.conversation, save_id=request.save_id, scope=request.scope)

    async def update_operation(self, request: UpdateConversation) -> UpdatedConversation:
        """The durable `update`'s body: the wrapped store's `update`, which a retry after a lost answer repeats safely.

        Writing the same title and metadata again changes nothing. With `expected_title`, a retry
        after the first attempt's commit finds the title it wrote, not the one it expected: when every
        field it sets already holds the value it sets, that is this update's own write (or an equal
        one), and the retry answers with the record. Any other `ConversationConflict` is the answer.
        """
        require_update(type(self).__name__)
        try:
            record = await self._store.update(
                request.conversation_id, scope=request.scope, **request.details, **expected_keyword(request.expected)
            )
        except ConversationConflict as conflict:
            current = await self._store.read_record(request.conversation_id)
            if (
                not request.details
                or current is None
                or any(getattr(current, key) != value for key, value in request.details.items())
            ):
                return UpdatedConversation(None, str(conflict))
            record = current
        return UpdatedConversation(record)

    # --- The ConversationStore API ----------------------------------------------------------------------

    async def load(
        self, conversation_id: str, *, limit: int | None = None, scope: str | None = None
    ) -> Conversation | None:
        """Load a conversation as `ConversationStore.load` does; in workflow code, as one durable unit.

        The conversation crosses the engine's journal: pass `limit` to keep a long one's payload small
        (Temporal refuses payloads over 2 MB); saving after the run still appends to the whole stored
        conversation.
        """
        if limit is not None and limit < 0:
            raise UserError('`limit` must not be negative.')
        if not self.in_workflow_code():
            return await self._store.load(conversation_id, limit=limit, scope=scope)
        return (await self._load_durably(LoadConversation(conversation_id, limit, scope))).conversation

    async def save(
        self,
        conversation: Conversation | AgentRunResult[Any],
        *,
        scope: str | None = None,
        save_id: str | None = None,
    ) -> list[ConversationEntry]:
        """Save as `ConversationStore.save` does; in workflow code as one durable unit, idempotently.

        Args:
            conversation: The conversation, or a run's result to save its `conversation`. A result's
                `conversation` then continues from the new revision, as after core's `save`.
            scope: As for `ConversationStore.save`.
            save_id: Names this save, so a retry recognises its own commit (see `idempotent_save`).
                Defaults to the result's `run_id` when a result is saved. In workflow code a plain
                `Conversation` needs one: a string stable across replay and unique to this save, such
                as `f'{workflow_id}:turn-{n}'`. Outside workflow code, without one, this is core's save.

        Returns:
            The entries this save stored, in order; empty when there was nothing new.

        Raises:
            ConversationConflict: The conversation changed in the store since it was loaded.
            UserError: In workflow code, a plain `Conversation` without `save_id`.
        """
        result: AgentRunResult[Any] | None = None
        if isinstance(conversation, AgentRunResult):
            result, conversation = conversation, conversation.conversation
            if save_id is None:
                save_id = result.run_id
        durable = self.in_workflow_code()
        if save_id is None:
            if durable:
                raise UserError(
                    f'{type(self).__name__}.save of a plain Conversation in workflow code needs `save_id=`: a string '
                    'that is the same when the workflow replays or recovers and unique to this save (for example '
                    "f'{workflow_id}:turn-{n}'), so that a retried save recognises its own commit. Saving the "
                    "run's result (`save(result)`) uses the run id."
                )
            return await self._store.save(conversation, scope=scope)
        messages = list(conversation.messages)
        request = SaveConversation(conversation, save_id, scope)
        saved = await (self._save_durably(request) if durable else self.save_operation(request))
        conversation.revision = saved.revision
        conversation.new_message_index = saved.message_count
        if result is not None:
            result._conversation_saved(saved.revision)  # pyright: ignore[reportPrivateUsage]
        return _entries(saved, messages)

    async def update(
        self,
        conversation_id: str,
        *,
        title: str | None | Unset = UNSET,
        metadata: dict[str, Any] | None | Unset = UNSET,
        expected_title: str | None | Unset = UNSET,
        scope: str | None = None,
    ) -> ConversationRecord:
        """Change a title or metadata as `ConversationStore.update` does; in workflow code, as one durable unit.

        Needs pydantic-ai-slim>=2.78. Of the arguments only those passed cross the engine's journal,
        so `metadata` must be what the engine can serialise (the SQL stores keep JSON objects).
        A retried unit recognises its own write (see `update_operation`).

        Raises:
            UserError: The store does not have the conversation (in its `scope`).
            ConversationConflict: Its title is not `expected_title`; nothing was written.
            NotImplementedError: pydantic-ai is older than 2.78, or the wrapped store has no `write_details`.
        """
        require_update(type(self).__name__)
        details: dict[str, Any] = {}
        if not isinstance(title, Unset):
            details['title'] = title
        if not isinstance(metadata, Unset):
            details['metadata'] = metadata
        expected: dict[str, Any] = {} if isinstance(expected_title, Unset) else {'title': expected_title}
        request = UpdateConversation(conversation_id, details, expected, scope)
        if not self.in_workflow_code():
            return await self._store.update(conversation_id, scope=scope, **details, **expected_keyword(expected))
        updated = await self._update_durably(request)
        if updated.record is None:
            raise ConversationConflict(conversation_id, message=updated.conflict)
        return updated.record

    # --- Storage primitives: the wrapped store's, never in workflow code ----------------------------------

    def _refuse(self, method: str) -> None:
        if self.in_workflow_code():
            raise WorkflowCodeIOError(
                f'{type(self).__name__}.{method} was called in workflow code, where store I/O would break replay. '
                'In workflow code only `load`, `save` and `update` are durable; branch, fork, list or delete '
                'conversations in an activity or step of your own (with the wrapped store).'
            )

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The wrapped store's; refused in workflow code."""
        self._refuse('read_record')
        return await self._store.read_record(conversation_id)

    async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Sequence[ConversationRecord]:
        """The wrapped store's; refused in workflow code."""
        self._refuse('read_records')
        return await self._store.read_records(scope=scope, limit=limit)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """The wrapped store's; refused in workflow code."""
        self._refuse('write_record')
        await self._store.write_record(record, new_entries=new_entries, expected_revision=expected_revision)

    async def write_details(
        self,
        conversation_id: str,
        details: ConversationDetails,
        *,
        expected_revision: str,
        expected: ConversationDetails | None = None,
    ) -> ConversationRecord:
        """The wrapped store's; refused in workflow code (where `update` is the durable unit)."""
        self._refuse('write_details')
        return await self._store.write_details(
            conversation_id, details, expected_revision=expected_revision, expected=expected
        )

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """The wrapped store's; refused in workflow code."""
        self._refuse('delete_record')
        await self._store.delete_record(conversation_id, expected_revision=expected_revision)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The wrapped store's; refused in workflow code."""
        self._refuse('read_entry')
        return await self._store.read_entry(entry_id)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The wrapped store's (one query on the SQL stores); refused in workflow code."""
        self._refuse('read_history')
        return await self._store.read_history(head_id, limit=limit)


def _entries(saved: ConversationSaved, messages: Sequence[Any]) -> list[ConversationEntry]:
    """The appended entries, rebuilt from their ids and the saved messages (a save appends a tail of them)."""
    count = len(saved.entry_ids)
    tail = list(messages[len(messages) - count :]) if count else []
    entries: list[ConversationEntry] = []
    parent_id = saved.parent_id
    for entry_id, message in zip(saved.entry_ids, tail, strict=True):
        entries.append(ConversationEntry(id=entry_id, parent_id=parent_id, message=message))
        parent_id = entry_id
    return entries
