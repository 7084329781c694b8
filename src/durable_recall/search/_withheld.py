"""What a search shows of tools marked `'private'` or `'redacted'`, and the visibility of the search tool itself.

A UI adapter keeps a private tool's calls and results (and a redacted one's results) from the chat
client by the `ui_visibility` pydantic-ai stamped on them. The search tool is public, and quotes
stored history: left alone it would hand the client what the adapter kept from it. So by default
an answer withholds those parts (`text.SkipTools`), and a hit found only in what it withholds is
dropped, so that a query for a private value cannot even learn where it was said.

`ConversationSearch(show_hidden_tools=...)` lets answers quote them; the search tool then takes the
strictest visibility of what it may show, so the adapters keep its output from the client in turn.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from ..base import MessageDecodeError, PydanticAIVersionError
from ..text import DEFAULT_SKIP_TOOLS, HIDDEN_VISIBILITIES, WITHHELD, SkipTools, index_text, tokenize
from ._hits import Hit

__all__ = ('ShowHidden', 'check_visibility_options', 'skip_tools_for', 'supports_ui_visibility', 'withheld_only')

ShowHidden = Literal['redacted', 'private']
"""How far `show_hidden_tools` reaches: `'redacted'` tools' parts, or those and `'private'` ones."""

_SHOWN_TOO: dict[str, frozenset[str]] = {
    'redacted': frozenset({'redacted'}),
    'private': frozenset({'redacted', 'private'}),
}

UI_VISIBILITY_PYDANTIC_AI = '2.78'
"""The oldest pydantic-ai-slim this library's tool visibility support is built and tested on."""


def supports_ui_visibility() -> bool:
    """Whether the installed pydantic-ai has tool `ui_visibility` (a field of `ToolDefinition`)."""
    from pydantic_ai.tools import ToolDefinition

    return 'ui_visibility' in getattr(ToolDefinition, '__dataclass_fields__', {})


def check_visibility_options(show_hidden_tools: object, hidden_tools: object) -> None:
    """Refuse a bad `show_hidden_tools` or `hidden_tools`, naming the value.

    Raises:
        ValueError, TypeError: A value of the wrong kind.
        PydanticAIVersionError: `show_hidden_tools` on a pydantic-ai without `ui_visibility`, which
            could not mark the search tool and so keep what it shows from a chat client.
    """
    if show_hidden_tools not in (None, 'redacted', 'private'):
        raise ValueError(f"show_hidden_tools must be None, 'redacted' or 'private', got {show_hidden_tools!r}")
    if not isinstance(hidden_tools, Mapping):
        raise TypeError(f'hidden_tools must be a mapping of tool name to visibility, got {hidden_tools!r}')
    for name, visibility in hidden_tools.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(name, str) or not name:
            raise TypeError(f'hidden_tools keys must be tool names (non-empty strings), got {name!r}')
        if visibility not in HIDDEN_VISIBILITIES:
            raise ValueError(f"hidden_tools[{name!r}] must be 'redacted' or 'private', got {visibility!r}")
    if show_hidden_tools is not None and not supports_ui_visibility():
        from importlib.metadata import version

        raise PydanticAIVersionError(
            f'ConversationSearch(show_hidden_tools={show_hidden_tools!r})',
            required=UI_VISIBILITY_PYDANTIC_AI,
            installed=version('pydantic-ai-slim'),
            api='tool `ui_visibility`, which marks the search tool so UI adapters keep its answers from the client',
        )


def skip_tools_for(show_hidden_tools: ShowHidden | None, hidden_tools: Mapping[str, str]) -> SkipTools:
    """The renderers' `skip_tools`: the search tool's own name, and the visibilities withheld."""
    shown_too = _SHOWN_TOO[show_hidden_tools] if show_hidden_tools is not None else frozenset[str]()
    return SkipTools(DEFAULT_SKIP_TOOLS, withheld=HIDDEN_VISIBILITIES - shown_too, by_name=hidden_tools)


def withheld_only(hit: Hit, terms: Collection[str], skip_tools: Collection[str]) -> bool:
    """Whether `hit` matched only in parts its answer withholds, so that showing it would point at them.

    A hit whose own message withholds nothing is always shown. One that withholds something is
    shown only when a query term is in what the answer shows of it; a message that cannot be
    decoded to check is dropped (fail closed).
    """
    if not isinstance(skip_tools, SkipTools) or not skip_tools.withheld:
        return False
    own = hit.own
    if WITHHELD not in own.shown.lines((), rarity=None, skip_tools=skip_tools):
        return False
    try:
        shown_terms = set(tokenize(index_text(own.shown.message, skip_tools=skip_tools)))
    except MessageDecodeError:
        return True
    return shown_terms.isdisjoint(terms)
