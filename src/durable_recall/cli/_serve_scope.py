"""What `mcp` and `ui` may show: the conversations they were started for, and nothing else.

A server started with `--conversation A` answers about A alone. Everything a client names (a
conversation id, a run id) is checked against the scope before anything is read, and an id out of
scope gets the very answer an id that does not exist gets, so a client learns neither the content
nor the existence of another conversation. Only `--all` opens the whole store, runs without a
conversation id included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..base import RunRecord
from ..stores import ConversationSummaries, ConversationSummary, StepStore, summarize_conversations

__all__ = ('ConversationRow', 'ServeScope', 'conversation_rows', 'run_in_scope')


@dataclass(frozen=True)
class ServeScope:
    """The conversations a server shows: `conversations=None` is every one (`--all`)."""

    conversations: frozenset[str] | None

    @classmethod
    def from_flags(cls, conversation: Sequence[str] | None, all_conversations: bool) -> ServeScope:
        """The scope `--conversation ID ...` or `--all` asks for (argparse makes them exclusive)."""
        if all_conversations:
            return cls(None)
        return cls(frozenset(conversation or ()))

    @property
    def everything(self) -> bool:
        """Whether the whole store is in scope."""
        return self.conversations is None

    def allows(self, conversation_id: str | None) -> bool:
        """Whether a conversation (or, for `None`, a run without one) is in scope."""
        if self.conversations is None:
            return True
        return conversation_id is not None and conversation_id in self.conversations

    def only(self) -> str | None:
        """The one conversation in scope, when there is exactly one."""
        if self.conversations is not None and len(self.conversations) == 1:
            return next(iter(self.conversations))
        return None

    def describe(self) -> str:
        """The scope in words, for page headers and the MCP server's instructions."""
        if self.conversations is None:
            return 'every conversation in the store'
        names = ', '.join(sorted(self.conversations))
        return f'conversation {names}' if len(self.conversations) == 1 else f'conversations {names}'


@dataclass(frozen=True)
class ConversationRow:
    """One conversation as listed: its run count and first and last start."""

    conversation_id: str
    runs: int
    first_started_at: datetime
    last_started_at: datetime


async def conversation_rows(store: StepStore, scope: ServeScope) -> list[ConversationRow]:
    """The conversations in scope, oldest first (counted in SQL where the store can)."""
    if isinstance(store, ConversationSummaries):
        rows, _ = await store.conversation_summaries()
    else:
        rows, _ = summarize_conversations(await store.list_runs())
    listed: list[ConversationSummary] = [row for row in rows if scope.allows(row.conversation_id)]
    listed.sort(key=lambda row: (row.first_started_at, row.conversation_id))
    return [ConversationRow(r.conversation_id, r.runs, r.first_started_at, r.last_started_at) for r in listed]


async def run_in_scope(store: StepStore, scope: ServeScope, run_id: str) -> RunRecord | None:
    """The run, or `None` when it does not exist or belongs to a conversation out of scope (the same answer)."""
    if not run_id or len(run_id) > 1024:
        return None
    run = await store.get_run(run_id)
    if run is None or not scope.allows(run.conversation_id):
        return None
    return run
