"""A conversation's timeline, a page at a time: runs in order, each with the messages it added.

Paging is what keeps a 100,000-message conversation quick to open. The search index already holds,
for every run it has caught up, the log number and role of each position of the run's record
(`IndexedRunRow`), and how many leading positions the run inherited from earlier runs of its
conversation. So a page needs the conversation's run list, the index's rows for those runs, and the
bodies of the page's messages only: it never rebuilds a run. A run the index has not caught up yet
(`ScopeStatus.pending`) is rebuilt from its snapshots instead, as `show` does (slower, and then its
inherited messages are shown too, since only the index knows how many they are); nothing is
written to the index while reading.

Messages are shown as the record holds them (compaction artifacts out), and a compaction summary
(role `summary`) as the summary itself, marked: it is where the run's context was cut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..base import RunRecord
from ..history import strip_artifacts, summary_view
from ..index import ROLE_NAMES, IndexedRunRow, decode_ints
from ..stores import StepStore
from ..text import has_compaction_marker, message_role
from ._reading import read_run

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('Entry', 'Part', 'RunSpan', 'Timeline', 'read_timeline')

_CUT_LOOKUP_LIMIT = 2_000
"""Runs up to this many messages have their compaction cut looked up in their last snapshot."""

_PART_LIMIT = 20_000
"""Characters of one part shown in a page; the rest is cut, with a note (the CLI's `show --json` has it all)."""


@dataclass(frozen=True)
class Part:
    """One part of a message: its kind, a label, its text, and whether it is folded (tool traffic)."""

    kind: str
    label: str
    text: str
    folded: bool


@dataclass(frozen=True)
class Entry:
    """One message of the timeline, at its position in its run's record."""

    index: int
    run_id: str
    position: int
    role: str
    timestamp: datetime | None
    parts: tuple[Part, ...]
    cut: bool = False
    """Whether the run's context was cut just before this message (a sliding window dropped what came before)."""

    @property
    def summary(self) -> bool:
        """Whether this is a compaction summary: what the model was given in place of the messages before it."""
        return self.role == 'summary'


@dataclass(frozen=True)
class RunSpan:
    """A run's stretch of the timeline: `count` messages from timeline index `start` on."""

    run: RunRecord
    start: int
    count: int
    inherited: int
    indexed: bool
    cut: int | None = None
    """The record position before which compaction cut the run's context (`None`: no cut, or not looked up)."""


@dataclass
class Timeline:
    """One page of a conversation's (or one run's) timeline."""

    runs: list[RunSpan]
    total: int
    offset: int
    limit: int
    entries: list[Entry] = field(default_factory=list[Entry])

    @property
    def has_next(self) -> bool:
        """Whether messages follow this page."""
        return self.offset + self.limit < self.total


@dataclass
class _Run:
    run: RunRecord
    row: IndexedRunRow | None
    seqs: Sequence[int] = ()
    roles: Sequence[int] = ()
    record: tuple[ModelMessage, ...] = ()
    first: int = 0

    @property
    def size(self) -> int:
        return len(self.record) if self.row is None else len(self.seqs)


async def read_timeline(
    store: StepStore, runs: Sequence[RunRecord], *, offset: int, limit: int, own_only: bool = True
) -> Timeline:
    """The page `[offset, offset + limit)` of the timeline of `runs` (one conversation's, in order).

    Args:
        store: The store the runs are in.
        runs: The runs, oldest first (already checked to be in scope).
        offset: The first timeline index to show.
        limit: How many messages to show at most.
        own_only: Leave out each run's inherited leading messages (a conversation's timeline); `False`
            shows a run's whole record, positions as search results number them.
    """
    storage = store.index_storage()
    conversations = {run.conversation_id for run in runs}
    pending: set[str] = set()
    for conversation_id in conversations:
        status = await storage.status(conversation_id, all_scopes=conversation_id is None)
        pending.update(status.pending)
    rows = await storage.load_runs([run.run_id for run in runs if run.run_id not in pending])
    loaded: list[_Run] = []
    for run in runs:
        row = rows.get(run.run_id)
        if row is None:
            summary = await read_run(store, run)
            loaded.append(_Run(run, None, record=summary.record))
        else:
            seqs, roles = decode_ints(row.seqs), decode_ints(row.roles)
            loaded.append(_Run(run, row, seqs, roles, first=row.first if own_only else 0))
    spans: list[RunSpan] = []
    total = 0
    for item in loaded:
        count = max(item.size - item.first, 0)
        spans.append(RunSpan(item.run, total, count, item.first, item.row is not None))
        total += count
    offset = max(0, min(offset, max(total - 1, 0)))
    entries = await _page(store, loaded, spans, offset, limit)
    on_page = {entry.run_id for entry in entries}
    cuts = await _cuts(store, [item for item in loaded if item.run.run_id in on_page])
    spans = [replace(span, cut=cuts.get(span.run.run_id)) for span in spans]
    entries = [replace(entry, cut=cuts.get(entry.run_id) == entry.position) for entry in entries]
    return Timeline(spans, total, offset, limit, entries)


async def _cuts(store: StepStore, items: list[_Run]) -> dict[str, int]:
    """Where compaction cut each run's context: the record position its last snapshot's kept messages start at.

    A sliding window leaves a marker in place of what it dropped, and the record (which keeps
    everything) does not show it; the run's last complete snapshot does. Its messages after the
    marker are the record's last ones, so the cut is the record's size less their number. Runs over
    `_CUT_LOOKUP_LIMIT` messages are not looked up (their snapshot would cost more than the page).
    """
    cuts: dict[str, int] = {}
    for item in items:
        if item.size > _CUT_LOOKUP_LIMIT:
            continue
        snapshot = await store.latest_snapshot(item.run.run_id)
        if snapshot is None or not any(has_compaction_marker(message) for message in snapshot.messages):
            continue
        kept = sum(strip_artifacts(message) is not None for message in snapshot.messages)
        if 0 < item.size - kept < item.size:
            cuts[item.run.run_id] = item.size - kept
    return cuts


async def _page(store: StepStore, loaded: list[_Run], spans: list[RunSpan], offset: int, limit: int) -> list[Entry]:
    wanted: dict[str, list[int]] = {}
    picks: list[tuple[int, _Run, int]] = []
    for item, span in zip(loaded, spans, strict=True):
        low, high = max(offset, span.start), min(offset + limit, span.start + span.count)
        for index in range(low, high):
            position = item.first + index - span.start
            picks.append((index, item, position))
            if item.row is not None:
                wanted.setdefault(item.run.run_id, []).append(item.seqs[position])
    bodies = await store.read_logs(wanted) if wanted else {}
    entries: list[Entry] = []
    for index, item, position in picks:
        if item.row is None:
            message = item.record[position]
            role = message_role(message)
        else:
            role = ROLE_NAMES[item.roles[position]] if item.roles[position] < len(ROLE_NAMES) else 'unknown'
            stored = bodies.get(item.run.run_id, {}).get(item.seqs[position])
            if stored is None:
                entries.append(_missing(index, item.run.run_id, position, role))
                continue
            message = _record_view(stored, role)
        entries.append(
            Entry(index, item.run.run_id, position, role, message.timestamp or item.run.started_at, parts(message))
        )
    return entries


def _record_view(message: ModelMessage, role: str) -> ModelMessage:
    """The message as the record holds it: a summary's own view, or the message without compaction artifacts."""
    if role == 'summary':
        return summary_view(message) or message
    return strip_artifacts(message) or message


def _missing(index: int, run_id: str, position: int, role: str) -> Entry:
    text = 'this message could not be read back from the log (`durable-recall check` names the damage)'
    return Entry(index, run_id, position, role, None, (Part('missing', 'unreadable', text, False),))


def parts(message: ModelMessage) -> tuple[Part, ...]:
    """A message's parts for display: tool calls and returns folded, everything else as text."""
    return tuple(_part(part) for part in message.parts)


def _part(part: Any) -> Part:
    kind = str(getattr(part, 'part_kind', type(part).__name__))
    tool = getattr(part, 'tool_name', None)
    if kind in ('tool-call', 'builtin-tool-call'):
        return Part(kind, f'tool call: {tool}', _clip(_call_args(part)), True)
    if kind in ('tool-return', 'builtin-tool-return'):
        return Part(kind, f'tool return: {tool}', _clip(_text(getattr(part, 'content', ''))), True)
    if kind == 'retry-prompt':
        return Part(kind, f'retry: {tool}' if tool else 'retry', _clip(_text(getattr(part, 'content', ''))), True)
    labels = {'system-prompt': 'system', 'user-prompt': 'user', 'text': 'text', 'thinking': 'thinking'}
    label = labels.get(kind, 'summary' if kind == 'compaction' else kind)
    return Part(kind, label, _clip(_text(getattr(part, 'content', ''))), kind == 'thinking')


def _call_args(part: Any) -> str:
    try:
        return str(part.args_as_json_str())
    except Exception:  # arguments a model sent that are not JSON: show them as stored
        return _text(getattr(part, 'args', ''))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        items: list[object] = list(content)  # pyright: ignore[reportUnknownArgumentType]
        return '\n'.join(_text(item) for item in items)
    try:
        return json.dumps(content, default=str, ensure_ascii=False, indent=1)
    except (TypeError, ValueError):
        return repr(content)


def _clip(text: str) -> str:
    if len(text) <= _PART_LIMIT:
        return text
    return text[:_PART_LIMIT] + f'\n[... {len(text) - _PART_LIMIT} more characters]'
