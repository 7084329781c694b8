"""Checks for the compaction capabilities' options, raised at construction with the bad value.

Both capabilities take a trigger (when to compact) and a target (how far down to compact) in
messages or tokens, so the checks are shared: an int is an int (not a bool, not a float), a
fraction is in (0, 1], and a target must sit below its trigger, or every request would compact
again and rewrite the head of the history the provider has cached.
"""

from __future__ import annotations

import warnings

__all__ = (
    'check_bool',
    'check_below',
    'check_count',
    'check_fraction',
    'check_one_token_trigger',
    'check_optional_count',
    'check_tokenizer',
    'check_window',
    'known_window',
    'resolve_limit',
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_count(name: str, value: object, minimum: int) -> None:
    """`value` is an int of at least `minimum`."""
    if not _is_int(value) or value < minimum:  # pyright: ignore[reportOperatorIssue]
        raise ValueError(f'{name} must be an int of at least {minimum}, got {value!r}')


def check_optional_count(name: str, value: object, minimum: int) -> None:
    """`value` is `None` or an int of at least `minimum`."""
    if value is not None:
        check_count(name, value, minimum)


def check_fraction(name: str, value: object) -> None:
    """`value` is `None` or a number above 0 and at most 1."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f'{name} must be a number above 0 and at most 1, got {value!r}')


def check_bool(name: str, value: object) -> None:
    """`value` is a bool (a truthy int is a mistake here, not a choice)."""
    if not isinstance(value, bool):
        raise TypeError(f'{name} must be a bool, got {value!r}')


def check_tokenizer(value: object) -> None:
    """`value` is `None` or a callable counting a text's tokens."""
    if value is not None and not callable(value):
        raise TypeError(f'tokenizer must be a callable taking a str and returning an int, got {value!r}')


def check_window(value: object) -> None:
    """`value` is `None` or a context window size in tokens."""
    check_optional_count('context_window', value, 1)


def check_below(target_name: str, target: int | None, trigger_name: str, trigger: int | None) -> None:
    """A target below its trigger: after compacting, the history must grow before the next compaction."""
    if target is not None and trigger is not None and target >= trigger:
        raise ValueError(
            f'{target_name} must be below {trigger_name} ({trigger!r}), got {target!r}: a history compacted '
            'to its trigger would compact again on the next request, changing its head (and missing the '
            "provider's prompt cache) every time"
        )


def resolve_limit(max_tokens: int | None, max_fraction: float | None, window: int | None) -> int | None:
    """The token trigger in tokens: `max_tokens`, or `max_fraction` of the window when it is known."""
    if max_tokens is not None:
        return max_tokens
    if max_fraction is not None and window is not None:
        return max(1, int(max_fraction * window))
    return None


def check_one_token_trigger(max_tokens: int | None, max_fraction: float | None) -> None:
    """Refuse both token triggers at once: they measure the same thing against two limits.

    Raises:
        ValueError: Both are set.
    """
    if max_tokens is not None and max_fraction is not None:
        raise ValueError(
            f'set max_tokens or max_fraction, not both: got max_tokens={max_tokens!r} and max_fraction={max_fraction!r}'
        )


def known_window(
    owner: str, max_fraction: float, configured: int | None, model_window: int | None, model_name: str, *, warn: bool
) -> int | None:
    """The context window `max_fraction` is a fraction of: the configured one, else the model's.

    When neither is known the trigger is off; with `warn`, a `UserWarning` says so (a capability
    warns once, not on every request).
    """
    window = configured or model_window
    if window is None and warn:
        warnings.warn(
            f'{owner}(max_fraction={max_fraction!r}) cannot tell the context window of model {model_name!r}, '
            "so its max_fraction trigger is off: pass context_window=... (in tokens) or set the model profile's "
            'context_window',
            UserWarning,
            stacklevel=3,
        )
    return window
