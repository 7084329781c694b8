"""What this release needs of pydantic-ai beyond the oldest version it supports, checked in one place.

durable-recall supports `pydantic-ai-slim>=2.62` so that it installs beside pydantic-ai-harness, whose
releases pin one exact pydantic-ai-slim (0.62 pins 2.62.0). Everything the core uses (the durability
capabilities, `durable_operation`, `conversation_id`, `CompactionPart`, ...) exists in 2.62. Only
pydantic-ai's conversation store API (`pydantic_ai.conversation_store`: `ConversationStore`,
`ConversationRecord`, ...) is newer, and only the conversation stores and their engine wrappers use it.

Those check here before they import it, so an older pydantic-ai gets an error that names the version
to install instead of a bare `ModuleNotFoundError` from deep inside the package, and the rest of the
library keeps working. The check asks whether the module exists rather than comparing version
strings: a pre-release or a patched build that has the API passes, one that lacks it does not.
"""

from __future__ import annotations

import importlib.util

from ._plain_errors import DurableRecallError

__all__ = ('CONVERSATION_STORE_PYDANTIC_AI', 'PydanticAIVersionError', 'require_conversation_store')

CONVERSATION_STORE_PYDANTIC_AI = '2.68'
"""The oldest pydantic-ai-slim whose conversation store API the conversation stores are built and tested on."""

_CONVERSATION_STORE_MODULE = 'pydantic_ai.conversation_store'


class PydanticAIVersionError(DurableRecallError, ImportError):
    """A durable-recall feature needs a newer pydantic-ai than the one installed.

    An `ImportError`, as for a missing optional extra: the feature cannot load in this environment,
    and code that probes for optional features with `except ImportError` keeps working.

    Attributes:
        feature: What was asked for (a module or a class).
        required: The pydantic-ai-slim version the feature needs at least.
        installed: The installed pydantic-ai-slim version, or `None` when it is not known.
    """

    def __init__(self, feature: str, *, required: str, installed: str | None, api: str) -> None:
        found = f'pydantic-ai-slim {installed} is installed' if installed else 'the installed one has no version'
        message = (
            f'{feature} needs pydantic-ai-slim>={required} (for {api}); {found}. '
            f'Upgrade it: pip install "pydantic-ai-slim>={required}". '
            'The rest of durable-recall (StepPersistence, ConversationSearch, the step stores, compaction) '
            'works with pydantic-ai-slim>=2.62.'
        )
        super().__init__(message, name=_CONVERSATION_STORE_MODULE)
        self.feature = feature
        self.required = required
        self.installed = installed
        self.message = message


def _installed_pydantic_ai() -> str | None:
    # Imported here: `importlib.metadata` costs ~10 ms to import, and only this error needs it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version('pydantic-ai-slim')
    except PackageNotFoundError:  # pragma: no cover - pydantic-ai installed without its metadata
        return None


def require_conversation_store(feature: str) -> None:
    """Raise `PydanticAIVersionError` for `feature` when pydantic-ai has no conversation store API.

    Called before the first import of `pydantic_ai.conversation_store` by the conversations layer and
    by the engine wrappers over it, so that they fail with the version to install.

    Args:
        feature: What needs the API, as the user wrote it (`durable_recall.conversations`,
            `TemporalConversationStore`, ...); the error names it.

    Raises:
        PydanticAIVersionError: The installed pydantic-ai predates the conversation store API.
    """
    if importlib.util.find_spec(_CONVERSATION_STORE_MODULE) is None:
        raise PydanticAIVersionError(
            feature,
            required=CONVERSATION_STORE_PYDANTIC_AI,
            installed=_installed_pydantic_ai(),
            api=f"pydantic-ai's conversation store API, `{_CONVERSATION_STORE_MODULE}`",
        )
