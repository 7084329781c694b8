"""The public surface, pinned: a change here is an API change and should be one on purpose."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import durable_recall


def test_version_is_the_package_metadata() -> None:
    from importlib.metadata import version

    assert durable_recall.__version__ == version('durable-recall')


def test_all_is_pinned() -> None:
    assert sorted(durable_recall.__all__) == [
        'AutoRecall',
        'ConversationSearch',
        'ConversationStoreSource',
        'DurableRecallError',
        'HistorySource',
        'InMemoryStepStore',
        'PostgresConversationStore',
        'PostgresStepStore',
        'SlidingWindowCompaction',
        'SnapshotHistorySource',
        'SqliteConversationStore',
        'SqliteStepStore',
        'StepPersistence',
        'StepStore',
        'ToolResultClearing',
        'open_store',
        'update_index',
    ]


def test_errors_are_pinned() -> None:
    from durable_recall import errors

    assert sorted(errors.__all__) == [
        'ConversationKeyErasedError',
        'CorruptConversationError',
        'CorruptRunError',
        'CorruptSnapshotError',
        'DurableRecallDeprecationWarning',
        'DurableRecallError',
        'JournalPayloadError',
        'PydanticAIVersionError',
        'RunIdConflictError',
        'SnapshotChainError',
        'StoreConfigurationError',
        'StoreUnavailableError',
        'WorkflowCodeIOError',
    ]


def test_errors_are_the_layers_own_classes() -> None:
    from durable_recall import base, errors

    for name in errors.__all__:
        if name == 'CorruptConversationError':
            continue  # loads with the conversation stores (pydantic-ai-slim>=2.68): the next test
        assert getattr(errors, name) is getattr(base, name), name
        assert issubclass(getattr(errors, name), Warning if name.endswith('Warning') else errors.DurableRecallError)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchError'"):
        errors.NoSuchError  # noqa: B018


@pytest.mark.conversation_store  # CorruptConversationError needs pydantic-ai-slim>=2.68 (tests/test_compat.py)
def test_the_conversation_error_is_the_layer_s_own() -> None:
    from durable_recall import conversations, errors

    assert errors.CorruptConversationError is conversations.CorruptConversationError
    assert issubclass(errors.CorruptConversationError, errors.DurableRecallError)


def test_importing_errors_loads_no_layer() -> None:
    code = (
        'import sys, durable_recall.errors; '
        'print(sorted(m for m in sys.modules if m.startswith(("durable_recall.", "pydantic_ai"))))'
    )
    assert _fresh(code) == "['durable_recall.errors']"


def test_records_are_exported_by_the_stores() -> None:
    from durable_recall import base, stores

    for name in (
        'PersistBatch',
        'RunRecord',
        'RunRegistration',
        'Segment',
        'Snapshot',
        'SnapshotDelta',
        'SnapshotState',
    ):
        assert name in stores.__all__, name
        assert getattr(stores, name) is getattr(base, name), name


def test_moved_names_warn_with_their_new_home() -> None:
    from durable_recall.errors import DurableRecallDeprecationWarning

    assert durable_recall._MOVED  # pinned: each name the top level exported before 0.2.0
    assert sorted(durable_recall._MOVED) == [
        'ConversationSaved',
        'CorruptConversationError',
        'CorruptRunError',
        'CorruptSnapshotError',
        'DurableConversationStore',
        'DurableRecallDeprecationWarning',
        'PersistBatch',
        'RunHistory',
        'RunIdConflictError',
        'RunRecord',
        'RunRegistration',
        'SearchScope',
        'Segment',
        'Snapshot',
        'SnapshotChainError',
        'SnapshotDelta',
        'SnapshotState',
        'StoreConfigurationError',
        'StoreUnavailableError',
        'WorkflowCodeIOError',
        'idempotent_save',
    ]
    for name, home in durable_recall._MOVED.items():
        if home == 'conversations' or name == 'CorruptConversationError':
            continue  # need pydantic-ai-slim>=2.68: the next test
        module = importlib.import_module(f'durable_recall.{home}')
        with pytest.warns(DurableRecallDeprecationWarning, match=rf'durable_recall\.{home}\.{name}`') as caught:
            value = getattr(durable_recall, name)
        assert value is getattr(module, name)
        assert caught[0].filename == __file__  # the warning points at the caller's line
        assert name not in durable_recall.__all__ and name not in dir(durable_recall)


@pytest.mark.conversation_store  # the conversation names need pydantic-ai-slim>=2.68 (tests/test_compat.py)
def test_moved_conversation_names_warn_with_their_new_home() -> None:
    from durable_recall import conversations, errors

    for name in ('ConversationSaved', 'DurableConversationStore', 'idempotent_save', 'CorruptConversationError'):
        home = conversations if name != 'CorruptConversationError' else errors
        with pytest.warns(errors.DurableRecallDeprecationWarning, match=f'{home.__name__}.{name}'):
            assert getattr(durable_recall, name) is getattr(home, name)


def test_a_moved_name_still_imports_from_the_top_level_with_a_warning() -> None:
    code = 'import warnings; warnings.simplefilter("error"); from durable_recall import RunRecord'
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert 'DurableRecallDeprecationWarning: `durable_recall.RunRecord` moved to `durable_recall.stores.RunRecord`' in (
        result.stderr
    )
    assert _fresh('from durable_recall import RunRecord; print(RunRecord.__name__)') == 'RunRecord'


@pytest.mark.conversation_store  # the conversation names need pydantic-ai-slim>=2.68 (tests/test_compat.py)
def test_every_name_resolves() -> None:
    for name in durable_recall.__all__:
        assert getattr(durable_recall, name) is not None


def _fresh(code: str) -> str:
    """What `code` prints, run in a new interpreter: what an import loads depends on what came before."""
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_the_package_loads_no_driver() -> None:
    code = 'import sys, durable_recall; print(sorted(m for m in ("psycopg", "sqlite3") if m in sys.modules))'
    assert _fresh(code) == '[]'


def test_importing_the_package_loads_no_layer() -> None:
    # The names load on first use: `durable-recall --help` must not pay for pydantic-ai.
    code = (
        'import sys, durable_recall; '
        'print(sorted(m for m in sys.modules if m.startswith(("durable_recall.", "pydantic_ai", "pydantic."))))'
    )
    assert _fresh(code) == '[]'


@pytest.mark.conversation_store  # the conversation names need pydantic-ai-slim>=2.68 (tests/test_compat.py)
def test_every_name_imports_in_a_fresh_process() -> None:
    names = ', '.join(durable_recall.__all__)
    code = f'from durable_recall import {names}; print("ok")'
    assert _fresh(code) == 'ok'
    star = 'from durable_recall import *; import durable_recall as d; g = globals(); print(set(d.__all__) <= set(g))'
    assert _fresh(star) == 'True'


@pytest.mark.conversation_store  # the conversation names need pydantic-ai-slim>=2.68 (tests/test_compat.py)
def test_each_name_is_its_layer_s_own() -> None:
    homes = durable_recall._HOMES
    assert sorted(homes) == sorted(durable_recall.__all__)
    for name, layer in homes.items():
        assert getattr(durable_recall, name) is getattr(importlib.import_module(f'durable_recall.{layer}'), name)


def test_dir_and_unknown_names() -> None:
    assert set(durable_recall.__all__) <= set(dir(durable_recall))
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        durable_recall.NoSuchThing  # noqa: B018


def test_the_layers_are_still_attributes_of_a_fresh_import() -> None:
    # An eager import used to load these; code that reached `durable_recall.search.X` keeps working.
    code = (
        'import durable_recall as d; '
        'print(d.search.SearchRequest.__name__, d.text.tokenize.__name__, d.errors.StoreUnavailableError.__name__)'
    )
    assert _fresh(code) == 'SearchRequest tokenize StoreUnavailableError'


_SANDBOX_PROBE = """
import sys
from temporalio.worker.workflow_sandbox._importer import Importer
from temporalio.worker.workflow_sandbox._restrictions import RestrictionContext, SandboxRestrictions

restrictions = SandboxRestrictions.default.with_passthrough_modules('durable_recall', 'pydantic_ai', 'pydantic')
host = sys.modules
with Importer(restrictions, RestrictionContext()).applied():
    from durable_recall import StepPersistence
    layer = sys.modules['durable_recall.persistence']
own = host['durable_recall.persistence']
print(layer is own, StepPersistence is own.StepPersistence)
"""


def test_a_name_first_used_in_temporal_s_sandbox_comes_from_the_host() -> None:
    # `DurableRecallPlugin` passes durable_recall through Temporal's workflow sandbox. A name that
    # workflow code is the first to use loads inside the sandbox's import hook, which must hand it the
    # worker process's own layer, not a sandbox re-execution. The end-to-end tests (tests/durable)
    # load every name on the host first, so this drives the sandbox's importer directly.
    pytest.importorskip('temporalio')
    assert _fresh(_SANDBOX_PROBE) == 'True True'
