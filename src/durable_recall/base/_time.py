"""Timestamps as stored: fixed-width UTC ISO-8601 text, or integer microseconds since the epoch.

Both sort as time does. Text is what Postgres's text columns and the index's run order hold;
SQLite's run and snapshot rows hold integers (schema version 11), eight bytes at most where the
text took 32, on rows a chat app writes several of per exchange.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ('format_timestamp', 'from_micros', 'parse_timestamp', 'stored_time', 'to_micros')

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def to_micros(moment: datetime) -> int:
    """Whole microseconds since 1970-01-01 UTC (exact: no float on the way)."""
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """The aware UTC datetime `to_micros` gave `micros` for.

    Raises:
        OverflowError: The moment is outside the years a `datetime` holds.
    """
    return _EPOCH + timedelta(microseconds=micros)


def stored_time(value: object) -> datetime:
    """A stored timestamp read back, whichever way its store holds it.

    A `datetime` (Postgres), integer microseconds (SQLite since schema version 11) or
    `format_timestamp` text (SQLite before): one reading for run and snapshot rows alike.

    Raises:
        ValueError: The value is none of those; the message follows the column's name
            (`started_at is a bytes, not a timestamp`).
    """
    if isinstance(value, datetime):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return from_micros(value)
        except OverflowError as error:
            raise ValueError(f'is not a timestamp ({error})') from error
    if isinstance(value, str):
        try:
            return parse_timestamp(value)
        except ValueError as error:
            raise ValueError(f'is not a timestamp ({error})') from error
    raise ValueError(f'is a {type(value).__name__}, not a timestamp')
