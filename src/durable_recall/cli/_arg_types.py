"""The command line's argparse parts that check a value: the parser class and the flags' value types.

Like `_parser`, this module imports no layer of the library (see `_parser` for why): a mistyped
value is answered by argparse and `_errors` alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn

from ._errors import EXIT_USAGE, CliError

__all__ = ('Parser', 'duration', 'embedding_model', 'fraction', 'non_empty', 'number')


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line raises `CliError` (one line) instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f'{message} (see `{self.prog} --help`)', status=EXIT_USAGE)


_DURATION_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800}


def duration(text: str) -> float:
    """`90d`, `12h`, `30m`, `45s` or `2w` as seconds (positive)."""
    count, unit = text.strip()[:-1], text.strip()[-1:].lower()
    if unit not in _DURATION_UNITS or not count.isdigit() or int(count) <= 0:
        raise argparse.ArgumentTypeError(
            f'expected a positive whole number and a unit (s, m, h, d, w), like 90d; got {text!r}'
        )
    return int(count) * _DURATION_UNITS[unit]


def non_empty(text: str) -> str:
    """An argparse `type` for `--store`: an empty value (`--store ''`, an unset variable) is a usage error.

    Left alone, an empty path would become the working directory and be reported as "no store at .".
    """
    if not text.strip():
        raise argparse.ArgumentTypeError('is empty: pass a SQLite path or a postgresql:// URL')
    return text


def embedding_model(text: str) -> str:
    """An argparse `type` for `--embedder`: an empty name (`--embedder ''`, an unset variable) is a usage error.

    Left alone, it would reach pydantic-ai as a model name and fail later with a message about providers.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(
            'is empty: pass a pydantic-ai embedding model name such as openai:text-embedding-3-small'
        )
    return text


def fraction(text: str) -> float:
    """An argparse `type` for `--hybrid-weight`: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number from 0 to 1, got {text!r}') from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f'must be between 0 and 1, got {text!r}')
    return value


def number(kind: type[int] | type[float], *, minimum: float) -> Callable[[str], float]:
    """An argparse `type` that reads an int or a float of at least `minimum`."""
    noun = 'an integer' if kind is int else 'a number'

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected {noun}, got {text!r}') from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f'must be at least {minimum:g}, got {text!r}')
        return value

    return parse
