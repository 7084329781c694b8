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
    return [_dump(item) for item in plain]


def _dump(item: Any) -> str:
    body = json.dumps(item, ensure_ascii=False, separators=(',', ':'))
    try:
        body.encode('utf-8')
    except UnicodeEncodeError:
        # A lone surrogate (from a tool that read broken bytes) has no UTF-8 form, so SQLite and
        # Postgres would refuse the text; JSON escapes keep it exact and storable.
        body = json.dumps(item, ensure_ascii=True, separators=(',', ':'))
    return body


def load_messages(bodies: Sequence[str]) -> list[ModelMessage]:
    """Parse message bodies written by [`dump_messages`][durable_recall._codec.dump_messages].

    Raises:
        MessageDecodeError: A body is not JSON or not a message; the message says which.
    """
    if not bodies:
        return []
    text = '[' + ','.join(bodies) + ']'
    try:
        return ModelMessagesTypeAdapter.validate_json(text)
    except ValidationError as error:
        if not _is_surrogate_error(error):
            raise MessageDecodeError(_first_error(error)) from error
    # pydantic-core's JSON parser refuses an escaped lone surrogate, which `dump_messages` writes
    # for text that has one; the standard library parses it, and validation gives the same result.
    try:
        return ModelMessagesTypeAdapter.validate_python(json.loads(text))
    except (ValueError, ValidationError) as error:
        raise MessageDecodeError(str(error)) from error


def _is_surrogate_error(error: ValidationError) -> bool:
    return any(item['type'] == 'json_invalid' and 'surrogate' in item['msg'] for item in error.errors())


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = '.'.join(str(part) for part in first['loc'])
    return f'{first["msg"]} at {location}' if location else first['msg']
