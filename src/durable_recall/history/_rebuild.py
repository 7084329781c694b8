"""Rebuild a run's durable record from its snapshots, one snapshot at a time.

A snapshot is the whole history at one step boundary, so consecutive snapshots repeat most of each
other; and compaction rewrites the history between them. The record must hold each message the run
persisted exactly once, in the order the run produced them.

The rule, for each snapshot `S` folded after the previous one `P` (both with compaction artifacts
removed, see [`RecordBuilder.fold`][durable_recall.history.RecordBuilder.fold]):

1. **Anchors.** Messages of `S` are matched to messages of `P` with the same content hash, in
   order, by a longest-matching-blocks alignment (longest common runs first; among equal runs the
   earliest). Each position is matched at most once, so the k-th copy of a repeated message is
   told apart from the first (occurrence counting). `S` is aligned against `P` rather than the
   whole record: compaction only removes or rewrites what the previous step held, it never brings
   a dropped message back, so a message of `S` that was not in `P` is new, even if an equal one
   was dropped long ago.
2. **Later copy.** An anchored message replaces its record entry when the record holds that
   content (same hash, maybe more detail, such as an instruction change core appended after the
   first save).
3. **Edits.** An unanchored message of `S` that keeps the *identity* of an unanchored message of
   `P` in the same stretch between anchors is that message edited in place (tool results cleared,
   an oversized message clamped); pairs are taken greedily, in order. Identity is what an in-place
   edit keeps and a separately created message does not share: for a request, a part's tool call
   id or creation timestamp; for a response, its creation timestamp or provider response id (not
   its tool call ids, which some models reuse). The record keeps the original (the edit blanks
   content search should still find), unless the edit only appended parts, which is a message
   completed in place: then its fuller copy replaces the original.
4. **New messages.** New messages only ever come at the end of a history (a new prompt, a
   response, tool returns). After the last anchor, the leading messages of `S` that are edits of
   `P`'s unanchored tail stay edits, and from the first one that is not, every message is new and
   appended to the record. An unanchored message that is no edit *before* the last anchor is a
   compaction rewrite of messages already recorded, and is not added, unless it is a summary (a
   request holding only `CompactionPart`s, as an application's history processor writes one) or
   a provider's compaction (a response holding a `CompactionPart` that names its provider, as
   pydantic-ai's core compaction or a stateless provider compaction leaves in the history): that
   is appended once, as the summaries of rule 5 are.

5. **Summaries.** A compaction summary a snapshot carries (the harness's, in either stored shape,
   or a plain `CompactionPart` riding in a request beside other parts, as a capability answering
   pydantic-ai's core compaction writes it after the standing system prompt) takes no part in the
   alignment. Its `summary_view` is appended to the record, before the
   snapshot's new messages, unless the previous snapshot carried the same summary: so each summary
   is recorded once, when it was written, and a later summary that restates an earlier one is a
   new summary.

Our own `SlidingWindowCompaction` marker says how many messages were dropped in total (after the
preserved first prompt, when it rides in that prompt), so when `S`
starts with one, the messages of `P` it dropped since `P` are taken out of the alignment. That
makes a dropped exchange that a new one repeats word for word (the reference's example E) exact.
Without such a marker that case stays ambiguous by content (`[q, a, u3]` after `[u1, r1, q, a]`
is the same `q a` with a prefix dropped just as well) and is read as the smaller change.

Where it cannot be exact, it fails towards duplication, never loss: an edit that re-creates a
message keeping none of its identity is appended as a new message.

Resumable: [`RecordBuilder.state`][durable_recall.history.RecordBuilder.state] is what a later
fold needs (the last snapshot's log numbers and record positions, and which record positions an
edit kept apart; hashes are recomputed from the messages read back), a few bytes whatever the
run's length, so the persistent index keeps it and resumes folding in another process without
re-reading the run's earlier snapshots.

Cost per snapshot: hashing its messages (a message equal to the previous snapshot's at the
expected position reuses that hash) and one alignment of two context-sized lists, so a run is
rebuilt in time linear in its snapshots times the context size.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from ..text import compaction_marker_count, has_compaction_marker, is_compaction_marker, message_role
from ._fold_state import FoldState
from ._hash import message_hash
from ._matching import Seen, anchors, extends, is_edit_of, same, same_head
from ._strip import provider_compaction, strip_artifacts, summary_view

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('Cleaned', 'RecordBuilder')

Cleaned: TypeAlias = tuple['ModelMessage', 'ModelMessage | None']
"""A stored message and what `strip_artifacts` made of it (`None`: nothing of it is conversation)."""


class RecordBuilder:
    """Folds a run's complete snapshots, in order, into its durable record (see the module docstring).

    Incremental: the record after n snapshots does not depend on when they were folded (a fold
    reads only the builder's state and the next snapshot), so a reader can keep a builder and fold
    in only what was saved since it last looked; or save `state` and `resume` from it elsewhere.

    Built with `track_changes=True` (and when resumed), a builder reports which record positions
    changed since it was last asked (`take_changes`): appended ones, and ones whose message was
    replaced by a different stored copy.
    """

    def __init__(
        self,
        *,
        track_changes: bool = False,
        digests: MutableMapping[object, str] | None = None,
        cleaned: MutableMapping[object, Cleaned] | None = None,
    ) -> None:
        """Start an empty record.

        Args:
            track_changes: Report changed positions (`take_changes`).
            digests: Content hashes by stored body (`Snapshot.bodies`), shared by the builders of
                one reader: a run inherits the messages an earlier run holds, and a body already
                hashed is not serialized and hashed again. Equal stored bodies decode to equal
                messages, so a hit is always right.
            cleaned: Messages without their artifacts by stored body, likewise shared: each
                entry keeps the message it was made from, and is used only for that very
                object (a reader that decodes each body once hands every builder the same one).
        """
        self._tracking = track_changes
        self._digests = digests
        self._cleaned = cleaned
        self._messages: list[ModelMessage | None] = []
        self._hashes: list[str] = []
        self._seqs: list[int] = []
        self._previous: list[Seen] = []
        self._previous_marker = 0
        self._previous_summaries: tuple[str, ...] = ()
        self._changes: dict[int, ModelMessage | None] = {}

    @classmethod
    def resume(
        cls,
        state: FoldState,
        previous: Mapping[int, ModelMessage],
        record: Mapping[int, ModelMessage],
        *,
        digests: MutableMapping[object, str] | None = None,
    ) -> RecordBuilder:
        """A builder that goes on from `state`, holding only the record positions a fold can touch.

        Args:
            state: What `state` returned.
            previous: The messages of the state's `previous` entries, by log number, as stored.
            record: The record's messages at the positions `state.needed()` names.
            digests: As for the constructor.

        Raises:
            KeyError: A message the state names is missing from `previous` or `record`.
        """
        builder = cls(track_changes=True, digests=digests)
        builder._messages = [None] * state.size
        builder._hashes = [''] * state.size
        builder._seqs = [-1] * state.size
        builder._previous_marker = state.marker
        builder._previous_summaries = state.summaries
        for digest, body_position, seq, record_index in state.previous:
            cleaned = strip_artifacts(previous[seq])
            message = previous[seq] if cleaned is None else cleaned
            # A stored state keeps no hash for a message it can read back: hashing it again is exact.
            digest = digest or message_hash(message)
            builder._previous.append(Seen(message, digest, body_position, seq, record_index))
            if record_index is not None and record_index not in state.record:
                builder._messages[record_index] = message
                builder._hashes[record_index] = digest
                builder._seqs[record_index] = seq
        for position, digest in state.record.items():
            cleaned = strip_artifacts(record[position])
            message = builder._messages[position] = record[position] if cleaned is None else cleaned
            builder._hashes[position] = digest or message_hash(message)
        return builder

    @property
    def state(self) -> FoldState:
        """What `resume` needs to go on folding from here."""
        previous = tuple((s.digest, s.body_position, s.seq, s.record_index) for s in self._previous)
        record = {
            s.record_index: self._hashes[s.record_index]
            for s in self._previous
            if s.record_index is not None and self._hashes[s.record_index] != s.digest
        }
        return FoldState(
            size=len(self._hashes),
            marker=self._previous_marker,
            previous=previous,
            record=record,
            summaries=self._previous_summaries,
        )

    @property
    def messages(self) -> tuple[ModelMessage, ...]:
        """The record so far: each persisted message once, in order, the latest copy of each.

        Raises:
            RuntimeError: The builder was resumed and holds only part of the record.
        """
        if any(message is None for message in self._messages):
            raise RuntimeError('a resumed RecordBuilder holds only the record positions it can still change')
        return tuple(message for message in self._messages if message is not None)

    @property
    def hashes(self) -> tuple[str, ...]:
        """The content hash of each record message (empty text where a resumed builder does not know it)."""
        return tuple(self._hashes)

    def __len__(self) -> int:
        return len(self._hashes)

    def message(self, position: int) -> ModelMessage:
        """The record message at a position this builder holds (every appended or changed one does)."""
        message = self._messages[position]
        if message is None:
            raise KeyError(position)
        return message

    def hash(self, position: int) -> str:
        """The content hash at a position this builder holds."""
        return self._hashes[position]

    def seq(self, position: int) -> int:
        """The log number of the record message at a position (-1 where the snapshots did not say)."""
        return self._seqs[position]

    def take_changes(self) -> dict[int, ModelMessage | None]:
        """Positions changed since the last call.

        Returns:
            Appended positions mapped to `None`, replaced ones to the message they replaced.
        """
        changes, self._changes = self._changes, {}
        return changes

    def fold(self, snapshot: Sequence[ModelMessage], seqs: Sequence[int] = (), bodies: Sequence[object] = ()) -> None:
        """Extend the record with the next complete snapshot of the run (the whole history it holds).

        Our compaction markers, harness summary artifacts and harness receipts are removed first:
        they describe the history rather than belong to it.

        Args:
            snapshot: The snapshot's messages.
            seqs: Their log numbers (`Snapshot.seqs`), if the store gives them: a record message
                re-read from the same log entry is known unchanged without comparing it.
            bodies: Their stored bodies (`Snapshot.bodies`), if the store gives them: keys of the
                `digests` the builder was made with.
        """
        # The marker heads the snapshot alone, or merged by core into the prompt that followed it.
        marker = compaction_marker_count(snapshot[0]) if snapshot and has_compaction_marker(snapshot[0]) else None
        offset = 1 if snapshot and is_compaction_marker(snapshot[0]) else 0
        body: list[tuple[int, ModelMessage, int, object]] = []
        summaries: list[tuple[ModelMessage, int]] = []
        # A log entry the last snapshot held was cleaned then: reuse it rather than scan its parts again.
        known = {seen.seq: seen.message for seen in self._previous if seen.seq >= 0} if seqs else {}
        for position, message in enumerate(snapshot):
            seq = seqs[position] if seqs else -1
            cleaned = known.get(seq) if seq >= 0 else None
            if cleaned is None:
                cleaned = self._strip(message, bodies[position] if bodies else None)
                if cleaned is not message and (view := summary_view(message)) is not None:
                    summaries.append((view, seq))
            elif self._previous_summaries and (view := summary_view(message)) is not None:
                summaries.append((view, seq))
            if cleaned is not None:
                body.append((position - offset, cleaned, seq, bodies[position] if bodies else None))
        self._record_summaries(summaries)
        current = self._hashed(body)
        previous = self._previous
        if marker is not None and (dropped := marker - self._previous_marker) > 0:
            # The marker rides in the preserved first prompt when the window keeps it: then what
            # it dropped follows that head instead of starting the previous snapshot.
            head = 1 if offset == 0 and same_head(previous, current) else 0
            previous = [seen for seen in previous if seen.body_position < head or seen.body_position >= head + dropped]
        self._align(previous, current)
        self._previous = current
        self._previous_marker = marker or 0

    def _strip(self, message: ModelMessage, stored: object) -> ModelMessage | None:
        """`strip_artifacts(message)`, from the shared `cleaned` when this message object was stripped before."""
        if self._cleaned is None or stored is None:
            return strip_artifacts(message)
        hit = self._cleaned.get(stored)
        if hit is not None and hit[0] is message:
            return hit[1]
        cleaned = strip_artifacts(message)
        self._cleaned[stored] = (message, cleaned)
        return cleaned

    def _record_summaries(self, summaries: list[tuple[ModelMessage, int]]) -> None:
        """Append the summaries the previous snapshot did not carry; remember this snapshot's."""
        digests: list[str] = []
        for view, seq in summaries:
            digest = message_hash(view)
            digests.append(digest)
            if digest in self._previous_summaries:
                continue
            if self._tracking:
                self._changes[len(self._messages)] = None
            self._messages.append(view)
            self._hashes.append(digest)
            self._seqs.append(seq)
        self._previous_summaries = tuple(digests)

    def _hashed(self, body: list[tuple[int, ModelMessage, int, object]]) -> list[Seen]:
        """Hash the snapshot, reusing the previous snapshot's hash for an equal message where expected."""
        previous = self._previous
        positions: dict[str, int] = {}
        for index in range(len(previous) - 1, -1, -1):
            positions[previous[index].digest] = index
        seen: list[Seen] = []
        expected = 0
        for body_position, message, seq, stored in body:
            if expected < len(previous) and (
                (seq >= 0 and previous[expected].seq == seq) or same(previous[expected].message, message)
            ):
                digest = previous[expected].digest
                expected += 1
            else:
                digest = self._digest(message, stored)
                found = positions.get(digest)
                if found is not None and found >= expected:
                    expected = found + 1
            seen.append(Seen(message, digest, body_position, seq))
        return seen

    def _digest(self, message: ModelMessage, stored: object) -> str:
        """The message's hash, from the shared `digests` when its stored body was hashed before."""
        if self._digests is None or stored is None:
            return message_hash(message)
        digest = self._digests.get(stored)
        if digest is None:
            digest = self._digests[stored] = message_hash(message)
        return digest

    def _align(self, previous: list[Seen], current: list[Seen]) -> None:
        done_previous = done_current = 0
        for previous_index, current_index in anchors([s.digest for s in previous], [s.digest for s in current]):
            self._pair_edits(previous[done_previous:previous_index], current[done_current:current_index])
            self._keep(previous[previous_index], current[current_index])
            done_previous, done_current = previous_index + 1, current_index + 1
        tail = current[done_current:]
        edited = self._pair_edits(previous[done_previous:], tail, stop_at_first_new=True)
        for seen in tail[edited:]:
            self._append(seen)

    def _append(self, seen: Seen) -> None:
        """A new record message."""
        seen.record_index = len(self._messages)
        if self._tracking:
            self._changes[seen.record_index] = None
        self._messages.append(seen.message)
        self._hashes.append(seen.digest)
        self._seqs.append(seen.seq)

    def _replace(self, index: int, seen: Seen) -> None:
        """Put another copy at a record position, noting it as changed unless it is the same log entry."""
        if self._tracking and (seen.seq < 0 or seen.seq != self._seqs[index]) and index not in self._changes:
            self._changes[index] = self._messages[index]
        self._messages[index] = seen.message
        self._hashes[index] = seen.digest
        self._seqs[index] = seen.seq

    def _keep(self, old: Seen, new: Seen) -> None:
        """An anchored message: the later copy replaces the record's when the record holds this content."""
        new.record_index = old.record_index
        index = old.record_index
        if index is not None and self._hashes[index] == new.digest and (new.seq < 0 or new.seq != self._seqs[index]):
            self._replace(index, new)

    def _pair_edits(self, old: Sequence[Seen], new: Sequence[Seen], *, stop_at_first_new: bool = False) -> int:
        """Pair each new message with the next old one whose identity it keeps; returns how many leading ones paired.

        Between anchors an unpaired message is a rewrite and is skipped; after the last anchor
        (`stop_at_first_new`) the first unpaired message starts the new ones.
        """
        start = paired = 0
        for seen in new:
            match = next((k for k in range(start, len(old)) if is_edit_of(seen, old[k])), None)
            if match is None:
                if stop_at_first_new:
                    break
                if message_role(seen.message) == 'summary' or provider_compaction(seen.message):
                    # A summary an application wrote in place of what it restates, or a provider's
                    # compaction: both are what the model was shown, recorded once, when they appear.
                    self._append(seen)
                continue
            self._edit(old[match], seen)
            start = match + 1
            paired += 1
        return paired

    def _edit(self, old: Seen, new: Seen) -> None:
        """An edited message: the record keeps its original unless the edit only appended parts."""
        new.record_index = index = old.record_index
        if index is None:
            return
        if self._hashes[index] == new.digest or extends(new.message, self.message(index)):
            self._replace(index, new)
