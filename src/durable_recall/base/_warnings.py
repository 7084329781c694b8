"""Warning classes of durable-recall."""

from __future__ import annotations

__all__ = ('DurableRecallDeprecationWarning',)


class DurableRecallDeprecationWarning(UserWarning):
    """A default or API that is going away.

    A `UserWarning` rather than a `DeprecationWarning`, which Python hides outside `__main__`:
    the people who must act on it are application authors running their app.
    """
