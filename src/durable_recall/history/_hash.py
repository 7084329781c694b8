"""A message's content hash: equal when two copies are the same persisted message.

A run's snapshots hold the same message many times, and not always as equal objects: core stamps
some fields only after the first snapshot that holds a message is saved, and a durable engine that
re-executes workflow code (a Temporal replay, a DBOS recovery) rebuilds the request parts with the
wall clock. The hash keeps what a message *says* and leaves out what gets stamped on it.

Left out, and why:

* Message `timestamp`, `run_id`, `conversation_id`: core stamps them when the request is prepared
  or the response committed, and a later run re-stamps inherited messages.
* Request `instructions` and the record parts core appends to a step's request after the
  `before_model_request` hooks (so after the snapshot): `InstructionBaselinePart`,
  `InstructionDeltaPart` (an `on_change='append'` instruction change), `ToolAvailabilityDeltaPart`,
  `CapabilityLoadDeltaPart`, `ModelSettingsDeltaPart`. They record configuration, not conversation.
* Every part field named `timestamp` (`UserPromptPart`, `SystemPromptPart`, `ToolReturnPart`,
  `RetryPromptPart`, `RetryFeedbackPart`, ...): request parts are built in workflow code, so a
  re-execution gives them new timestamps. The price: two separately created prompts with the same
  text hash alike; the record builder tells repeats apart by position (occurrences), not by hash.
* A capability part's (pydantic-ai 2.78) `record_id` and `capability_id`: a uuid7 made when the
  part is built (so a re-execution of the workflow code that enqueues it makes a new one, and so
  does loading a stored part that lacks one), and the run id of the capability that enqueued it.
  What the part says is its kind, source, scope, rendering and content; those are kept.
* Message `state` (`'interrupted'`, `'suspended'`, ...): a lifecycle flag core flips on a message
  it already holds, not content.
* The `'__pydantic_ai__'` namespace of message `metadata`: framework protocol state core writes
  during a request (token counting, fallback bookkeeping). Application metadata keys still count:
  core never rewrites them, and an application may tell two messages apart by them.
* Response `workspace_ref`: core refreshes it on the last response when a run ends.
* Response `request_timestamp` and `duration` (pydantic-ai 2.78): when the request was sent and how
  long the model took, wall-clock stamps that pydantic-ai itself leaves out of a response's equality.

Kept: response `usage`, `model_name`, `model_id`, `provider_*` (including `provider_response_id`),
`finish_reason` and the parts. A durable engine journals the model's response, so a replay hands
back the same values; they also make two genuinely different responses with the same text differ.

Hashes are the first 128 bits of the sha256 of canonical JSON (sorted keys, ASCII escapes), as
32 hex characters, so they are stable across processes and Python versions. 128 bits keep an
accidental collision out of reach for any store, at half the size: the search index stores them
(a run's resumable fold state, and per message for the inheritance check), and on a chat app's
workload the fold state of each run is a large share of the store. They are compatibility data: a
change to what the hash covers needs an index rebuild (see `INDEX_VERSION`); the fold state of an
earlier release, which kept whole sha256 digests, is read back truncated to this length.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..base import plain_messages

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('HASH_HEX_LENGTH', 'RECORD_PART_KINDS', 'canonical_form', 'message_hash', 'message_hashes')

HASH_HEX_LENGTH = 32
"""Hex characters in a message hash: the first 128 bits of its sha256."""

RECORD_PART_KINDS = frozenset(
    {
        'instruction-baseline',
        'instruction-delta',
        'tool-availability-delta',
        'capability-load-delta',
        'model-settings-delta',
    }
)
"""`part_kind`s of the configuration records core appends to a request after it was first saved."""

_STAMPED_FIELDS = frozenset({'timestamp'})
_STAMPED_CAPABILITY_FIELDS = frozenset({'timestamp', 'record_id', 'capability_id'})
"""A capability part's generated fields: a fresh uuid7 `record_id` (and a fresh `timestamp`) each time
one is built or loaded without them, and `capability_id`, the enqueuing capability's run id."""
_IGNORED_FIELDS = frozenset(
    {
        'timestamp',
        'run_id',
        'conversation_id',
        'instructions',
        'state',
        'workspace_ref',
        'request_timestamp',
        'duration',
    }
)
_FRAMEWORK_METADATA_KEY = '__pydantic_ai__'


def message_hash(message: ModelMessage) -> str:
    """The content hash of one message (see the module docstring for what it ignores)."""
    return message_hashes([message])[0]


def message_hashes(messages: Sequence[ModelMessage]) -> list[str]:
    """The content hash of each message; one serializer call for the whole batch."""
    return [_digest(form) for form in _canonical_forms(messages)]


def canonical_form(message: ModelMessage) -> dict[str, Any]:
    """The JSON-ready form the hash is taken of: the message's dump without the stamped fields."""
    return _canonical_forms([message])[0]


def _canonical_forms(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    if not messages:
        return []
    dumped = cast(list[dict[str, Any]], plain_messages(messages))
    return [_canonical(item) for item in dumped]


def _canonical(item: dict[str, Any]) -> dict[str, Any]:
    form = {key: value for key, value in item.items() if key not in _IGNORED_FIELDS}
    form['metadata'] = _application_metadata(item.get('metadata'))
    parts = cast(list[dict[str, Any]], item.get('parts') or [])
    form['parts'] = [
        {key: value for key, value in part.items() if key not in _stamped_part_fields(part)}
        for part in parts
        if part.get('part_kind') not in RECORD_PART_KINDS
    ]
    return form


def _stamped_part_fields(part: dict[str, Any]) -> frozenset[str]:
    return _STAMPED_CAPABILITY_FIELDS if part.get('part_kind') == 'capability' else _STAMPED_FIELDS


def _application_metadata(metadata: object) -> object:
    if not isinstance(metadata, dict):
        return metadata
    kept = {key: value for key, value in cast(dict[str, Any], metadata).items() if key != _FRAMEWORK_METADATA_KEY}
    return kept or None


def _digest(form: dict[str, Any]) -> str:
    text = json.dumps(form, sort_keys=True, separators=(',', ':'), ensure_ascii=True)
    return hashlib.sha256(text.encode('ascii')).hexdigest()[:HASH_HEX_LENGTH]
