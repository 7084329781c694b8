"""Which tool calls and returns an answer may show, by the `ui_visibility` pydantic-ai stamps on them.

pydantic-ai (2.78 and later) lets a tool declare a `ui_visibility`: `'public'` (the default),
`'redacted'` (a chat client is sent the call but not the result) or `'private'` (neither). The run
stamps the tool's setting on each call part, and the return built from it, and the UI adapters send
a client a part by that stamp, never by the tool definitions of a later run. Search quotes stored
history back into a chat, so it must read the same stamps: otherwise a private tool's output would
reach the client through the search tool, which is public.

The stamp is what is stored, so it is what decides here too. A part without one (stored before
pydantic-ai stamped, by a tool without a setting, or by an older pydantic-ai) counts as public,
unless the application names its tool in `by_name` (`ConversationSearch(hidden_tools=...)`).

`SkipTools` carries this through the renderers' `skip_tools` argument: it is the set of skipped tool
names it always was (the search tool's own, shown as a placeholder), with the visibilities to
withhold beside it. A plain set of names withholds nothing, so the command line and indexing are
unchanged. Withheld parts are never shown: a message that had one shows `WITHHELD` once in their place.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Literal

__all__ = ('HIDDEN_VISIBILITIES', 'WITHHELD', 'SkipTools', 'Visibility', 'withholds')

Visibility = Literal['public', 'redacted', 'private']
"""pydantic-ai's `ToolUIVisibility`, named here so that the text layer imports no pydantic-ai."""

HIDDEN_VISIBILITIES: frozenset[str] = frozenset({'redacted', 'private'})
"""The visibilities whose tool calls and returns an answer withholds unless told otherwise."""

_KNOWN: frozenset[str] = frozenset({'public', 'redacted', 'private'})

WITHHELD = '[withheld: a tool call or result this chat may not show]'
"""Shown once in a message in place of the tool calls and returns it withholds."""


class SkipTools(frozenset[str]):
    """Tool names skipped as the search tool's own traffic, and the tool visibilities withheld.

    It is a `frozenset` of the skipped names, so it goes wherever `skip_tools` does; the
    renderers also withhold the calls and returns whose visibility is in `withheld`.

    Attributes:
        withheld: The visibilities whose calls and returns are not shown.
        by_name: Visibilities the application gives tools by name, for parts stored without a stamp
            (the stricter of a part's stamp and its tool's entry decides).
    """

    withheld: frozenset[str]
    by_name: Mapping[str, str]

    def __new__(
        cls,
        names: Iterable[str] = (),
        *,
        withheld: Collection[str] = HIDDEN_VISIBILITIES,
        by_name: Mapping[str, str] | None = None,
    ) -> SkipTools:
        """Build one; the visibilities given must be pydantic-ai's.

        Raises:
            ValueError: A visibility that is not `'public'`, `'redacted'` or `'private'`, named.
        """
        given = dict(by_name or {})
        for value in (*withheld, *given.values()):
            if value not in _KNOWN:
                raise ValueError(f"a tool visibility must be 'public', 'redacted' or 'private', got {value!r}")
        self = super().__new__(cls, names)
        self.withheld = frozenset(withheld)
        self.by_name = given
        return self

    def hides(self, tool_name: str | None, stamp: object) -> bool:
        """Whether a call or return of `tool_name` stamped `stamp` is withheld.

        The stricter of the stamp and `by_name` decides, and a stamp pydantic-ai does not write
        (not one of its three values) is withheld: when in doubt, the chat is not shown it.
        """
        if stamp is not None and (stamp not in _KNOWN or stamp in self.withheld):
            return True
        return tool_name is not None and self.by_name.get(tool_name) in self.withheld

    def _key(self) -> tuple[frozenset[str], frozenset[str], frozenset[tuple[str, str]]]:
        return frozenset(self), self.withheld, frozenset(self.by_name.items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SkipTools):
            return self._key() == other._key()
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f'SkipTools({sorted(self)!r}, withheld={sorted(self.withheld)!r}, by_name={dict(self.by_name)!r})'

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (tuple(self), tuple(self.withheld), dict(self.by_name)))


def _rebuild(names: tuple[str, ...], withheld: tuple[str, ...], by_name: dict[str, str]) -> SkipTools:
    return SkipTools(names, withheld=withheld, by_name=by_name)


def withholds(skip_tools: Collection[str], tool_name: str | None, stamp: object) -> bool:
    """Whether a tool call or return is withheld under `skip_tools` (a plain collection withholds nothing)."""
    return isinstance(skip_tools, SkipTools) and skip_tools.hides(tool_name, stamp)
