"""What the DBOS compaction crash test compares: messages as content, free of what differs between two runs.

Imported by the crashing app and by the test alike, and imports no DBOS: the test process must
not register the app's workflow. Two runs of the same loop differ only in identities (run and
conversation ids, which the search answer names, and part timestamps); everything else a provider would be sent,
and everything the store holds, must be identical.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ToolCallPart, ToolReturnPart

_IDS = re.compile(r'\b(run|conversation)(_id)?(["=:]\s*"?)…?[0-9A-Za-z_.:-]+')  # answers show `…` and an id's end
_TIME = re.compile(r'\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?( UTC)?')


def normalize(text: str) -> str:
    """`text` with run and conversation ids and times replaced by placeholders (they differ between runs)."""
    return _TIME.sub('<time>', _IDS.sub(r'\1\2\3<id>', text))


def message_content(message: ModelMessage) -> list[Any]:
    """A message as a provider is sent it: each part's kind, tool name and call id, and its content."""
    parts: list[Any] = [message.kind]
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            parts.append([part.part_kind, part.tool_name, part.tool_call_id, part.args_as_json_str()])
        elif isinstance(part, ToolReturnPart):
            parts.append([part.part_kind, part.tool_name, part.tool_call_id, normalize(part.model_response_str())])
        else:
            content: object = getattr(part, 'content', None)
            text = content if isinstance(content, str) else json.dumps(content, default=str, sort_keys=True)
            parts.append([part.part_kind, normalize(text)])
    return parts


def view_content(view: Sequence[ModelMessage]) -> list[Any]:
    return [message_content(message) for message in view]


def append_view(log: Path, workflow_id: str, view: Sequence[ModelMessage]) -> None:
    """Append one request's view to `log`, flushed to disk, so it survives the process's `os._exit`."""
    with log.open('a') as file:
        file.write(json.dumps({'workflow': workflow_id, 'view': view_content(view)}) + '\n')
        file.flush()
        os.fsync(file.fileno())


def read_views(log: Path, workflow_id: str) -> list[list[Any]]:
    """The views `log` holds for one workflow, in the order the model was handed them."""
    if not log.exists():
        return []
    records = [json.loads(line) for line in log.read_text().splitlines() if line]
    return [record['view'] for record in records if record['workflow'] == workflow_id]
