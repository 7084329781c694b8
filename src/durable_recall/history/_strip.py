"""Take compaction artifacts out of a stored message before the record builder compares it.

Compaction leaves things in a history that describe it rather than belong to it: our sliding
window's marker, a harness's summary parts and its receipts. Two snapshots taken either side of a
compaction only line up once those are gone, and search should not find them as conversation.

A summary is the exception in part: what it says is something the model was shown, so the record
keeps each summary once, as a message of its own (`summary_view`), apart from the conversation it
restates: it never takes part in lining snapshots up, and it is indexed with the role `summary`.

A capability answering pydantic-ai's core compaction protocol (2.78) writes its summary as a plain
`CompactionPart` in a request, and keeps the standing system prompt (and maybe the first prompt)
ahead of it in the same request. Such a part riding in a request with other content is a summary
artifact too (`carried_summary`): taken out, the carrier lines up with the message it was (the
first request, the system prompt), and the summary is recorded once. A request that holds nothing
but summaries is the summary itself, and stays as it is (role `summary`, see `_rebuild`). A
provider's compaction part (in a response, naming its provider) is conversation, recorded as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..text import (
    HARNESS_LEGACY_SUMMARY_PREFIX,
    is_compaction_marker,
    is_compaction_receipt,
    is_marker_part,
    is_summary_artifact,
)
from ._hash import RECORD_PART_KINDS

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ModelResponsePart

__all__ = (
    'CORE_SUMMARY_KEY',
    'carried_summary',
    'provider_compaction',
    'record_view',
    'strip_artifacts',
    'summary_view',
)

CORE_SUMMARY_KEY = 'durable_recall.compaction.summary.v1'
"""`CompactionPart.metadata` key of the part our compaction capabilities write for core's protocol.

Defined here, below the capabilities, because the record rebuild recognises it. Compatibility data.
"""


def strip_artifacts(message: ModelMessage) -> ModelMessage | None:
    """The message without compaction artifacts, or `None` if nothing of it is conversation.

    Our compaction marker goes whole; harness summary parts (both stored shapes), receipt parts and
    the summary a core compaction carries in a request beside other parts (see `_carries_summary`)
    go part by part, and a message they leave with nothing but configuration records (an
    instruction change core appended to it, say) goes too. A message that was empty to begin with
    stays: it was persisted as such.
    """
    if is_compaction_marker(message):
        return None
    carried = _carries_summary(message)
    parts = [
        part
        for part in message.parts
        if not (
            is_summary_artifact(part)
            or is_compaction_receipt(part)
            or is_marker_part(part)
            or (carried and carried_summary(part))
        )
    ]
    if len(parts) == len(message.parts):
        return message
    if all(part.part_kind in RECORD_PART_KINDS for part in parts):
        return None
    return replace(message, parts=parts)


def record_view(message: ModelMessage) -> ModelMessage | None:
    """The message as a record of messages each stored once holds it: artifacts out, summaries kept.

    For sources whose every message is stored once already (a conversation store's entries), so no
    snapshot alignment needs the summaries out of the way: like `strip_artifacts`, but a harness
    summary part stays, as the plain `CompactionPart` `summary_view` makes of it. A message that was
    nothing but a summary is then the summary (role `summary`), indexed once like the record's. The
    note our capabilities write for core's compaction goes, as their marker does: it only says what
    moved out of view, and a conversation store keeps what moved.
    """
    # pydantic-ai is imported where a message is looked at, not with the module (see `text`).
    from pydantic_ai.messages import CompactionPart

    if is_compaction_marker(message):
        return None
    parts: list[ModelRequestPart | ModelResponsePart] = []
    changed = False
    for part in message.parts:
        if is_summary_artifact(part):
            parts.append(CompactionPart(content=_summary_text(part)))
            changed = True
        elif is_compaction_receipt(part) or is_marker_part(part) or _is_ours(part):
            changed = True  # our core compaction's note, like our marker, says nothing of the conversation
        else:
            parts.append(part)
    if not changed:
        return message
    if all(part.part_kind in RECORD_PART_KINDS for part in parts):
        return None
    return replace(message, parts=parts)


def summary_view(message: ModelMessage) -> ModelRequest | None:
    """The compaction summaries a stored message carries, as a request of their own; `None` if none.

    Each summary becomes a plain `CompactionPart` holding its text (the legacy system-prompt shape
    without its prefix), which search indexes and shows as `Summary: ...`, and which
    `strip_artifacts` leaves as it is. The request keeps the carrier's time and run id, so the
    summary is dated when it was written and, inherited by a later run, is known as the earlier
    run's. A function of the stored message alone: the record builder and a search reading the
    message back by its log number make the same view.
    """
    from pydantic_ai.messages import CompactionPart, ModelRequest

    carried = _carries_summary(message)
    summaries = [
        CompactionPart(content=_summary_text(part))
        for part in message.parts
        if is_summary_artifact(part) or (carried and carried_summary(part))
    ]
    if not summaries:
        return None
    return ModelRequest(parts=summaries, timestamp=message.timestamp, run_id=message.run_id)


def carried_summary(part: object) -> bool:
    """Whether a request part is a summary an application or capability wrote: a plain `CompactionPart`.

    Plain: no provider name, id or provider details (a provider's part is opaque and goes back to
    that provider), and some text.
    """
    from pydantic_ai.messages import CompactionPart

    return (
        isinstance(part, CompactionPart)
        and part.provider_name is None
        and part.id is None
        and part.provider_details is None
        and bool(part.content)
    )


def _carries_summary(message: ModelMessage) -> bool:
    """Whether a request carries a core compaction's summary beside content of its own.

    Two shapes: our capabilities' part (`CORE_SUMMARY_KEY`), which rides in the first request
    after its parts; and any plain summary behind nothing but the standing system prompt, the shape
    core requires of a capability that writes its summary into a new first request. A plain summary
    riding in a prompt otherwise (as `record_view` leaves a harness summary) stays with it.
    """
    if message.kind != 'request' or not any(map(carried_summary, message.parts)):
        return False
    if any(_is_ours(part) for part in message.parts):
        return True
    others = {part.part_kind for part in message.parts} - _SUMMARY_ALONE_KINDS
    return others == {'system-prompt'}


def _is_ours(part: object) -> bool:
    metadata: object = getattr(part, 'metadata', None)
    return carried_summary(part) and isinstance(metadata, dict) and CORE_SUMMARY_KEY in metadata


_SUMMARY_ALONE_KINDS = RECORD_PART_KINDS | {'compaction'}
"""Part kinds of a request that is a summary alone: summaries and the configuration records core adds."""


def _summary_text(part: object) -> str:
    from pydantic_ai.messages import CompactionPart, SystemPromptPart

    if isinstance(part, SystemPromptPart):
        return part.content.removeprefix(HARNESS_LEGACY_SUMMARY_PREFIX)
    assert isinstance(part, CompactionPart)
    return part.content or ''


def provider_compaction(message: ModelMessage) -> bool:
    """Whether a message is a provider's compaction response: a `CompactionPart` naming its provider.

    Its content is opaque (OpenAI's is encrypted), so it is recorded verbatim but not searchable.
    """
    return message.kind == 'response' and any(
        part.part_kind == 'compaction' and getattr(part, 'provider_name', None) is not None for part in message.parts
    )
