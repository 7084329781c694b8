"""The local default's torch threads: one for a query, torch's for a batch, `DURABLE_RECALL_LOCAL_THREADS` for both.

What the model really ran with is read inside its forward pass (a torch module hook), in a fresh
process per setting, since the model and its setting load once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from durable_recall import ConversationSearch, SnapshotHistorySource
from durable_recall.stores import InMemoryStepStore

from ._kit import embedder, needs_numpy, needs_semantic

_PROBE = """
import asyncio, json, torch
from torch.nn.modules.module import register_module_forward_pre_hook
from durable_recall.search._embedding import local_embedder

default = torch.get_num_threads()
seen = {'query': set(), 'batch': set()}
phase = 'query'
register_module_forward_pre_hook(lambda module, args: seen[phase].add(torch.get_num_threads()))

async def main():
    global phase
    found = await local_embedder()
    await found.embed_query('where does the ledger export live')
    phase = 'batch'
    await found.embed_documents(['the export lives in a bucket', 'thanks, noted'])

asyncio.run(main())
print(json.dumps({
    'default': default, 'query': sorted(seen['query']), 'batch': sorted(seen['batch']),
    'after': torch.get_num_threads(),
}))
"""


def probe(setting: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != 'DURABLE_RECALL_LOCAL_THREADS'}
    if setting is not None:
        env['DURABLE_RECALL_LOCAL_THREADS'] = setting
    result = subprocess.run(
        [sys.executable, '-c', _PROBE], capture_output=True, text=True, timeout=300, check=False, env=env
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


@needs_semantic
@pytest.mark.parametrize(
    ('setting', 'query', 'batch'), [(None, 1, 'default'), ('3', 3, 3), ('torch', 'default', 'default')]
)
def test_the_local_default_encodes_with_the_threads_asked_and_leaves_the_process_alone(
    setting: str | None, query: object, batch: object
) -> None:
    found = probe(setting)
    default = found['default']
    assert (found['query'], found['batch']) == (
        [default if query == 'default' else query],
        [default if batch == 'default' else batch],
    )
    assert found['after'] == default, "the process's own torch setting must not change"


def source() -> SnapshotHistorySource:
    return SnapshotHistorySource(InMemoryStepStore())


@needs_semantic
@pytest.mark.parametrize('value', ['0', '-2', 'two', '1.5'])
def test_a_bad_setting_is_a_configuration_error_naming_it(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv('DURABLE_RECALL_LOCAL_THREADS', value)
    with pytest.raises(ValueError, match=f'DURABLE_RECALL_LOCAL_THREADS={value!r}: expected a positive number'):
        ConversationSearch(source(), scope='conversation', ranking='hybrid')


@needs_numpy
def test_an_embedder_of_your_own_ignores_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('DURABLE_RECALL_LOCAL_THREADS', 'two')
    ConversationSearch(
        source(), scope='conversation', ranking='hybrid', embedder=embedder()
    )  # not read: torch is not ours to set
