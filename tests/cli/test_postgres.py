"""Every read command against a PostgresStepStore in its own schema (`--store URL --schema S`)."""

from __future__ import annotations

import json

import psycopg
import pytest

from durable_recall import PostgresStepStore

from ._support import DETAIL, OTHER, SUPPORT, populate_sync, run_cli
from .test_errors import assert_one_line_error


def test_every_command_reads_a_postgres_store(
    postgres_url: str, postgres_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    populated = populate_sync(PostgresStepStore(postgres_url, schema=postgres_schema))
    store = ['--store', postgres_url, '--schema', postgres_schema]

    conversations = json.loads(run_cli(capsys, ['conversations', *store, '--json']).out)
    assert [(c['conversation_id'], c['runs']) for c in conversations['conversations']][:2] == [(SUPPORT, 6), (OTHER, 2)]
    assert conversations['store'].endswith(f"(schema '{postgres_schema}')")

    runs = run_cli(capsys, ['runs', *store, '--conversation', SUPPORT, '--wide'])
    assert runs.status == 0
    assert [line.split()[0] for line in runs.out.splitlines()[1:7]] == populated.support_runs

    show = run_cli(capsys, ['show', *store, populated.support_runs[0]])
    assert show.status == 0 and DETAIL in show.out

    search = run_cli(capsys, ['search', *store, '--conversation', SUPPORT, 'billing export s3'])
    assert search.status == 0
    first = populated.support_runs[0]
    assert f'run: {first if len(first) <= 12 else "…" + first[-8:]} | ' in search.out
    assert '\n>[0] User: Hi!' in search.out


def test_an_empty_schema_is_reported_and_left_empty(
    postgres_url: str, postgres_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, ['runs', '--store', postgres_url, '--schema', postgres_schema, '--all'])
    assert_one_line_error(result, 'no durable-recall store in Postgres at', 'table dr_meta is missing')
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        tables = conn.execute(
            'SELECT count(*) FROM information_schema.tables WHERE table_schema = %s', (postgres_schema,)
        ).fetchone()
    assert tables == (0,)
