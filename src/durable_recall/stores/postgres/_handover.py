"""The first connection a store makes, handed to its pool instead of being thrown away.

A store opens its pool on first use, after a direct connection (which reports a refusal with the
server's reason) has checked the schema. Closing that connection and waiting for the pool to make
another cost a fresh process's first search a second connect and a second server backend's first
reads of the catalog: 5 to 10 ms of a 25 ms cold search here. The pool takes connections from its
`connection_class`; a subclass made for one pool returns the checked connection from its first
`connect`, and connects as usual after that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ('handing_over',)


def handing_over() -> tuple[type[AsyncConnection[Any]], list[AsyncConnection[Any]]]:
    """A connection class for one pool, and the list its `connect` takes a waiting connection from first.

    Connect the direct connection through the class too (the list is empty then), so that the pool
    gets a connection of its own class; put it in the list once it is checked.
    """
    import psycopg

    waiting: list[AsyncConnection[Any]] = []

    class HandOver(psycopg.AsyncConnection[Any]):
        @classmethod
        async def connect(cls, *args: Any, **kwargs: Any) -> Any:
            if waiting:
                return waiting.pop()
            return await super().connect(*args, **kwargs)

    return HandOver, waiting
