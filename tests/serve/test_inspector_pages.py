"""The inspector's pages without a browser: paging a long conversation, stored markup, a Postgres store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from benchmarks._asgi import asgi_get
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import PostgresStepStore, SqliteStepStore, StepPersistence
from durable_recall.base._codec import dump_messages
from durable_recall.cli._serve_scope import ServeScope
from durable_recall.cli._ui import PAGE_SIZE, build_ui_app
from durable_recall.persistence import snapshot_state
from durable_recall.persistence._delta import diff_history
from durable_recall.stores import PersistBatch, RunRegistration, SnapshotDelta
from tests.cli._support import DETAIL, SUPPORT, populate

MARKUP = '<script>window.ZEBRA = 1</script><b>ZEBRA bold</b> & "quotes"'


async def _long_conversation(store: SqliteStepStore, runs: int, per_run: int) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for run in range(runs):
        run_id = f'long-run-{run}'
        messages: list[ModelMessage] = []
        for i in range(0, per_run, 2):
            moment = start + timedelta(hours=run, seconds=i)
            messages.append(ModelRequest(parts=[UserPromptPart(f'question ZEBRA{run}x{i}', timestamp=moment)]))
            messages.append(ModelResponse(parts=[TextPart(f'answer ZEBRA{run}x{i + 1}')], timestamp=moment))
        diff = diff_history([], messages)
        delta = SnapshotDelta(
            run_id=run_id,
            index=0,
            step_index=0,
            state=snapshot_state(messages),
            segments=diff.segments,
            messages=dump_messages(diff.new_messages),
        )
        registration = RunRegistration(run_id=run_id, conversation_id='long', token=run_id)
        await store.save_batch(PersistBatch(registration=registration, deltas=[delta]))


def test_a_long_conversation_pages_in_order(tmp_path: Path) -> None:
    async def go() -> None:
        store = SqliteStepStore(tmp_path / 'long.db')
        try:
            await _long_conversation(store, runs=3, per_run=90)
            app = build_ui_app(store, ServeScope(frozenset({'long'})), 'long.db')
            seen: list[str] = []
            offset = 0
            while True:
                status, page = await asgi_get(app, f'/conversation?id=long&offset={offset}')
                assert status == 200
                words = re.findall(r'(?:question|answer) (ZEBRA\d+x\d+)', page)
                assert len(words) == min(PAGE_SIZE, 270 - offset)
                seen.extend(words)
                if 'Later' not in page:
                    break
                offset += PAGE_SIZE
            expected = [f'ZEBRA{run}x{i}' for run in range(3) for i in range(90)]
            assert seen == expected  # every message once, in order, over three pages
            assert offset == 200
        finally:
            await store.aclose()

    anyio.run(go)


def _echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f'echo: {MARKUP}')])


def test_stored_markup_is_shown_as_text(tmp_path: Path) -> None:
    async def go() -> None:
        store = SqliteStepStore(tmp_path / 'markup.db')
        try:
            agent = Agent(FunctionModel(_echo), capabilities=[StepPersistence(store=store)])
            await agent.run(MARKUP, conversation_id='markup')
            app = build_ui_app(store, ServeScope(None), 'markup.db')
            for target in ('/conversation?id=markup', '/search?q=ZEBRA+bold'):
                status, page = await asgi_get(app, target)
                assert status == 200
                assert '<script>window' not in page and '<b>ZEBRA' not in page
                assert '&lt;script&gt;window.ZEBRA = 1&lt;/script&gt;' in page
        finally:
            await store.aclose()

    anyio.run(go)


def test_the_inspector_reads_a_postgres_store(postgres_url: str, postgres_schema: str) -> None:
    async def go() -> None:
        store = PostgresStepStore(postgres_url, schema=postgres_schema)
        try:
            populated = await populate(store)
            app = build_ui_app(store, ServeScope(frozenset({SUPPORT})), 'postgres')
            status, page = await asgi_get(app, f'/conversation?id={SUPPORT}')
            assert status == 200 and DETAIL in page
            status, page = await asgi_get(app, '/search?q=billing+export+s3')
            assert status == 200 and '<mark>billing</mark>' in page
            status, _ = await asgi_get(app, f'/run?id={populated.runs["ticket-99"][0]}')
            assert status == 404
        finally:
            await store.aclose()

    anyio.run(go)
