"""`durable-recall mcp` through the MCP SDK's own clients: stdio and streamable HTTP, SQLite and Postgres."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from durable_recall import PostgresStepStore
from durable_recall.cli import main
from tests.cli._support import DETAIL, OTHER, SUPPORT, Populated, populate_sync

from ._servers import get, serve

TOKEN = 'ZEBRA-token-0123456789abcdef'
TOOLS = {'search', 'list_conversations', 'show_conversation', 'show_run'}


def _text(result: object) -> str:
    return '\n'.join(getattr(part, 'text', '') for part in getattr(result, 'content', []))


async def _exercise(client: Client, populated: Populated) -> None:
    tools = await client.list_tools()
    assert {tool.name for tool in tools.tools} == TOOLS
    assert all(tool.annotations is not None and tool.annotations.read_only_hint for tool in tools.tools)
    found = _text(await client.call_tool('search', {'query': 'billing export s3'}))
    assert DETAIL in found
    assert '[score: ' in found and 'conversation:' not in found  # one conversation's search: its id is not repeated
    listed = _text(await client.call_tool('list_conversations', {}))
    assert SUPPORT in listed and OTHER not in listed
    shown = _text(await client.call_tool('show_run', {'run_id': populated.support_runs[0]}))
    assert DETAIL in shown
    timeline = _text(await client.call_tool('show_conversation', {'conversation_id': SUPPORT, 'limit': 200}))
    assert all(run_id in timeline for run_id in populated.support_runs)
    refused = _text(await client.call_tool('show_run', {'run_id': populated.runs[OTHER][0]}))
    assert refused == f'No run {populated.runs[OTHER][0]!r} is available on this server.'


def _stdio(store_args: Sequence[str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=['-m', 'durable_recall', 'mcp', *store_args, '--conversation', SUPPORT]
    )


def test_stdio_on_sqlite(served_store: Populated) -> None:
    async def go() -> None:
        async with Client(stdio_client(_stdio(['--store', served_store.store]))) as client:
            await _exercise(client, served_store)

    anyio.run(go)


def test_stdio_on_postgres(postgres_url: str, postgres_schema: str) -> None:
    populated = populate_sync(PostgresStepStore(postgres_url, schema=postgres_schema))

    async def go() -> None:
        args = ['--store', postgres_url, '--schema', postgres_schema]
        async with Client(stdio_client(_stdio(args))) as client:
            await _exercise(client, populated)

    anyio.run(go)


def test_streamable_http_with_a_token(served_store: Populated) -> None:
    args = ['mcp', '--store', served_store.store, '--conversation', SUPPORT, '--transport', 'http']
    with serve(args, token=TOKEN, ready_path='/mcp') as served:
        url = served.url + '/mcp'

        async def go() -> None:
            http = create_mcp_http_client(headers={'Authorization': f'Bearer {TOKEN}'})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                await _exercise(client, served_store)

        anyio.run(go)
        body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        assert get(url)[0] == 401
        assert get(url, {'Authorization': 'Bearer wrong-token-0123456789'})[0] == 401
        assert get(url, {'Authorization': TOKEN})[0] == 401  # the scheme is part of it
        assert get(url, {'Authorization': f'Bearer {TOKEN}x'})[0] == 401
        headers = {'Authorization': 'Bearer ', 'Content-Type': 'application/json'}
        status, text = get(url, headers, method='POST', data=body.encode())
        assert status == 401 and 'bearer token' in text


def test_http_without_a_token_on_loopback(served_store: Populated) -> None:
    args = ['mcp', '--store', served_store.store, '--conversation', SUPPORT, '--transport', 'http']
    with serve(args, ready_path='/mcp') as served:

        async def go() -> None:
            async with Client(served.url + '/mcp') as client:
                found = _text(await client.call_tool('search', {'query': 'billing export s3'}))
                assert DETAIL in found

        anyio.run(go)


@pytest.mark.parametrize('command', [['mcp', '--transport', 'http'], ['ui']])
@pytest.mark.parametrize('host', ['0.0.0.0', '192.0.2.10', 'example.internal'])
def test_a_remote_bind_without_a_token_is_refused(
    served_store: Populated,
    command: list[str],
    host: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv('DURABLE_RECALL_TOKEN', raising=False)
    status = main([command[0], '--store', served_store.store, '--all', '--host', host, *command[1:]])
    err = capsys.readouterr().err
    assert status == 2
    assert f'--host {host} is not a loopback address' in err and 'DURABLE_RECALL_TOKEN' in err


def test_a_short_token_is_refused(
    served_store: Populated, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('DURABLE_RECALL_TOKEN', 'short')
    status = main(['ui', '--store', served_store.store, '--all', '--host', '0.0.0.0'])
    assert status == 2 and 'at least 16' in capsys.readouterr().err


def test_an_unknown_conversation_is_an_error_at_start(
    served_store: Populated, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(['mcp', '--store', served_store.store, '--conversation', 'ticket-ZEBRA'])
    assert status == 1 and "no conversation 'ticket-ZEBRA'" in capsys.readouterr().err
