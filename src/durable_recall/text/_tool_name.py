"""The search tool's name: compatibility data (a model's history and a marker's text carry it)."""

from __future__ import annotations

__all__ = ('SEARCH_TOOL_NAME',)

SEARCH_TOOL_NAME = 'search_conversation_history'
"""The name the search tool registers under."""
