"""Take compaction artifacts out of a stored message before the record builder compares it.

Compaction leaves things in a history that describe it rather than belong to it: our sliding
window's marker, a harness's summary parts and its receipts. Two snapshots taken either side of a
compaction only line up once those are gone, and search should not find them as conversation.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic_ai.messages import ModelMessage

from ..text import is_compaction_marker, is_compaction_receipt, is_marker_part, is_summary_artifact
from ._hash import RECORD_PART_KINDS

__all__ = ('strip_artifacts',)


def strip_artifacts(message: ModelMessage) -> ModelMessage | None:
    """The message without compaction artifacts, or `None` if nothing of it is conversation.

    Our compaction marker goes whole; harness summary parts (both stored shapes) and receipt parts
    go part by part, and a message they leave with nothing but configuration records (an
    instruction change core appended to it, say) goes too. A message that was empty to begin with
    stays: it was persisted as such.
    """
    if is_compaction_marker(message):
        return None
    parts = [
        part
        for part in message.parts
        if not (is_summary_artifact(part) or is_compaction_receipt(part) or is_marker_part(part))
    ]
    if len(parts) == len(message.parts):
        return message
    if all(part.part_kind in RECORD_PART_KINDS for part in parts):
        return None
    return replace(message, parts=parts)
