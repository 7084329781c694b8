"""Message serialization shared by the capability and every store.

One JSON object per message, produced by pydantic-ai's own `ModelMessagesTypeAdapter`, so what a
store holds is exactly what core would write to `all_messages_json()`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

__all__ = ('MessageDecodeError', 'dump_messages', 'load_messages')


class MessageDecodeError(ValueError):
    """A stored message body is not a valid pydantic-ai message."""


def dump_messages(messages: Sequence[ModelMessage]) -> list[str]:
    """Serialize each message to its own compact JSON object text."""
    if not messages:
        return []
    plain: list[Any] = ModelMessagesTypeAdapter.dump_python(list(messages), mode='json')
    return [json.dumps(item, ensure_ascii=False, separators=(',', ':')) for item in plain]


def load_messages(bodies: Sequence[str]) -> list[ModelMessage]:
    """Parse message bodies written by [`dump_messages`][durable_recall._codec.dump_messages].

    Raises:
        MessageDecodeError: A body is not JSON or not a message; the message says which.
    """
    if not bodies:
        return []
    try:
        return ModelMessagesTypeAdapter.validate_json('[' + ','.join(bodies) + ']')
    except ValidationError as error:
        raise MessageDecodeError(_first_error(error)) from error


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = '.'.join(str(part) for part in first['loc'])
    return f'{first["msg"]} at {location}' if location else first['msg']
