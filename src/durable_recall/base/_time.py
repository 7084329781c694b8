"""Timestamps as stored text: fixed-width UTC ISO-8601, so that sorting the text sorts by time."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ('format_timestamp', 'parse_timestamp')


def format_timestamp(moment: datetime) -> str:
    """Fixed-width ISO-8601 UTC text, so that sorting the text sorts by time."""
    return moment.astimezone(UTC).isoformat(timespec='microseconds')


def parse_timestamp(text: str) -> datetime:
    """Read text written by `format_timestamp` back into an aware UTC datetime.

    Raises:
        ValueError: The text is not an ISO-8601 timestamp with a UTC offset.
    """
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f'timestamp {text!r} has no UTC offset')
    return moment.astimezone(UTC)
