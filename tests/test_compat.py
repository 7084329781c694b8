"""The oldest supported pydantic-ai (2.62) lacks the conversation store API: what needs it says so, the rest works.

CI runs the suite on 2.62 too, so the real thing is tested there. These tests also hide the API in a
fresh interpreter (`sys.modules[...] = None` makes the module unimportable, as on 2.62), so they
check the refusal on every version.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from durable_recall.base import CONVERSATION_STORE_PYDANTIC_AI, PydanticAIVersionError, require_conversation_store

from .conftest import HAS_CONVERSATION_STORE

_HIDE_API = "import sys; sys.modules['pydantic_ai.conversation_store'] = None\n"

_STATEMENTS = {
    'from durable_recall import SqliteConversationStore': 'durable_recall.conversations',
    'from durable_recall import ConversationStoreSource': 'durable_recall.conversations',
    'import durable_recall.conversations.postgres': 'durable_recall.conversations',
    **{
        f'from durable_recall.{engine} import {name}': f'durable_recall.{engine}.{name}'
        for engine, name in [('temporal', 'TemporalConversationStore'), ('dbos', 'DBOSConversationStore')]
    },
}

_PROBE = """
from durable_recall.base import PydanticAIVersionError
for statement in {statements!r}:
    try:
        exec(statement)
    except PydanticAIVersionError as error:
        print(isinstance(error, ImportError), error)
    else:
        print('no error')
"""


def _fresh(code: str) -> list[str]:
    """What `code` prints, line by line, in a new interpreter with the conversation store API hidden."""
    run = subprocess.run([sys.executable, '-c', _HIDE_API + code], capture_output=True, text=True, check=True)
    return run.stdout.strip().splitlines()


def test_what_needs_the_conversation_store_api_names_the_version() -> None:
    # One interpreter for all: each statement is a first import there, as it would be in an application.
    lines = _fresh(_PROBE.format(statements=list(_STATEMENTS)))
    installed = version('pydantic-ai-slim')
    assert lines == [
        f'True {feature} needs pydantic-ai-slim>={CONVERSATION_STORE_PYDANTIC_AI} '
        f"(for pydantic-ai's conversation store API, `pydantic_ai.conversation_store`); "
        f'pydantic-ai-slim {installed} is installed. Upgrade it: pip install "pydantic-ai-slim>=2.68". '
        'The rest of durable-recall (StepPersistence, ConversationSearch, the step stores, compaction) '
        'works with pydantic-ai-slim>=2.62.'
        for feature in _STATEMENTS.values()
    ]


def test_the_rest_of_the_library_works_without_it() -> None:
    code = (
        'import durable_recall as d\n'
        'from durable_recall.temporal import DurableRecallPlugin\n'
        'names = [n for n in d.__all__ if n not in d._EXPORTS["conversations"]]\n'
        'print(all(getattr(d, n) is not None for n in names), DurableRecallPlugin.__name__)\n'
    )
    assert _fresh(code) == ['True DurableRecallPlugin']


def test_the_check_passes_where_the_api_is() -> None:
    if HAS_CONVERSATION_STORE:
        require_conversation_store('anything')
    else:
        with pytest.raises(
            PydanticAIVersionError, match=f'anything needs pydantic-ai-slim>={CONVERSATION_STORE_PYDANTIC_AI}'
        ):
            require_conversation_store('anything')
