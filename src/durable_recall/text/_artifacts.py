"""Recognise what pydantic-ai-harness's compaction writes into a history, so search can leave it out.

These are compatibility data: histories written by an agent that used the harness's compaction
strategies carry them, and the shapes are that library's stored format, matched exactly.

* A *summary artifact* restates earlier messages. Indexing it would make every summarised fact
  match twice, once in the original and once in the summary.
* A *receipt* says history was dropped or summarised. It has no content of the conversation's own.
"""

from __future__ import annotations

from typing import cast

from . import _parts

__all__ = (
    'HARNESS_LEGACY_SUMMARY_PREFIX',
    'HARNESS_RECEIPT_TAG',
    'HARNESS_SUMMARY_KEY',
    'is_compaction_receipt',
    'is_summary_artifact',
)

HARNESS_SUMMARY_KEY = 'pydantic-ai-harness.compaction.summary.v1'
"""`CompactionPart.metadata` key (value `True`) of a summary the harness's summarising compaction wrote."""

HARNESS_LEGACY_SUMMARY_PREFIX = 'Summary of previous conversation:\n\n'
"""How the harness's older summaries, stored as system prompts, begin. The blank line is part of it."""

HARNESS_RECEIPT_TAG = 'pydantic-ai-harness.compaction.receipt.v1'
"""`TextContent.metadata` of a compaction receipt."""


def is_summary_artifact(part: object) -> bool:
    """Whether a part is a compaction summary the harness wrote, in either of its stored shapes.

    A `CompactionPart` counts only when it carries the harness's marker and nothing a provider
    would set, and has text: one an application wrote itself, or a provider's, is real content.
    A system prompt counts only when it starts with the exact legacy prefix, blank line included.
    """
    if isinstance(part, _parts.CompactionPart):
        return (
            part.metadata is not None
            and part.metadata.get(HARNESS_SUMMARY_KEY) is True
            and part.provider_name is None
            and part.id is None
            and part.provider_details is None
            and bool(part.content)
        )
    if isinstance(part, _parts.SystemPromptPart):
        return part.content.startswith(HARNESS_LEGACY_SUMMARY_PREFIX)
    return False


def is_compaction_receipt(part: object) -> bool:
    """Whether a part is a harness compaction receipt: a user prompt holding the tagged text item."""
    if not isinstance(part, _parts.UserPromptPart) or isinstance(part.content, str):
        return False
    items = cast(list[object], list(part.content))
    return any(isinstance(item, _parts.TextContent) and item.metadata == HARNESS_RECEIPT_TAG for item in items)
