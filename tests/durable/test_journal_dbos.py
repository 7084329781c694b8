"""Journal erasure on DBOS: a conversation's recorded values are encrypted with its key, unreadable once it is deleted.

Runs the 7-run recall conversation (`_recall_script`: the secret is seen in run 1, compacted away and
recalled by a search in run 7) under DBOS with `ConversationSerializer`, on an SQLite and a Postgres
system database. No row of the system database (nor, on SQLite, a byte of its files) holds the
secret, while DBOS reads the steps back through the serializer with it (so the check can fail); after
`erase_conversation` reading them fails with `ConversationKeyErasedError`, and
`delete_conversation_workflows` removes the workflow.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability

from durable_recall import SqliteStepStore
from durable_recall.dbos import ConversationSerializer, delete_conversation_workflows
from durable_recall.dbos._journal import ENCRYPTED_PREFIX, SERIALIZER_NAME
from durable_recall.errors import ConversationKeyErasedError
from durable_recall.stores import erase_conversation

from .._services.dbos import DBOSSystemDB, launched_dbos, reexecute_workflow
from ._persistence import STORE_DIR, sqlite_store
from ._recall_script import DETAIL, converse, recall_capabilities, recall_model

pytestmark = pytest.mark.anyio

SECRET = 'acme-ZEBRA-exports'
assert SECRET in DETAIL

STORE = sqlite_store('journal-dbos')
AGENT = Agent(recall_model(), name='journal_dbos', capabilities=[*recall_capabilities(STORE), DBOSDurability()])


def conversation_of_workflow(workflow_id: str) -> str | None:
    return workflow_id.removeprefix('chat-') if workflow_id.startswith('chat-') else None


@DBOS.workflow(name='durable_recall_tests.journal_dbos')
async def journal_dbos(conversation_id: str) -> list[str]:
    return await converse(AGENT, conversation_id)


def system_rows(url: str) -> list[str]:
    """Every value of every row of every table of the system database, as text."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        schemas = [None] if url.startswith('sqlite') else [s for s in inspector.get_schema_names() if s == 'dbos']
        values: list[str] = []
        with engine.connect() as conn:
            for schema in schemas:
                for table in inspector.get_table_names(schema=schema):
                    reflected = sa.Table(table, sa.MetaData(), schema=schema, autoload_with=conn)
                    for row in conn.execute(sa.select(reflected)):
                        values.extend(str(value) for value in row)
        return values
    finally:
        engine.dispose()


async def test_system_database_holds_no_plaintext_and_is_unreadable_after_delete(
    dbos_system_db: DBOSSystemDB,
) -> None:
    conversation_id = f'journal-{uuid.uuid4().hex}'
    workflow_id = f'chat-{conversation_id}'
    # A store instance of its own on the agent's database (the serializer runs it on its own loop).
    keys = SqliteStepStore(STORE_DIR / 'journal-dbos.db')
    serializer = ConversationSerializer(keys, workflow_conversation=conversation_of_workflow, key_cache_seconds=0)
    try:
        async with launched_dbos(dbos_system_db, serializer=serializer):
            with SetWorkflowID(workflow_id):
                outputs = await journal_dbos(conversation_id)
            assert SECRET in outputs[-1], 'the search in run 7 recalls the secret'

            rows = system_rows(dbos_system_db.url)
            assert rows and not [value for value in rows if SECRET in value]
            assert not [value for value in rows if conversation_id in value and value != workflow_id]
            encrypted = [value for value in rows if value.startswith(ENCRYPTED_PREFIX)]
            assert len(encrypted) >= 17, "the inputs, the output and every step's output"
            assert SERIALIZER_NAME in rows
            if dbos_system_db.kind == 'sqlite':
                path = Path(dbos_system_db.url.removeprefix('sqlite:///'))
                for file in (path, path.with_name(path.name + '-wal')):
                    assert not file.exists() or SECRET.encode() not in file.read_bytes()

            # The control: DBOS reads the steps back through the serializer, secret and all.
            steps = await DBOS.list_workflow_steps_async(workflow_id)
            assert any(SECRET in str(step['output']) for step in steps)

            erased = await erase_conversation(STORE, conversation_id)
            assert len(erased.runs) == 7
            # DBOS's introspection shows what it cannot load as stored (here: sealed); loading the result raises.
            sealed = [str(step['output']) for step in await DBOS.list_workflow_steps_async(workflow_id)]
            assert not [output for output in sealed if SECRET in output]
            assert len([output for output in sealed if output.startswith(ENCRYPTED_PREFIX)]) >= 15
            with pytest.raises(ConversationKeyErasedError):
                await (await DBOS.retrieve_workflow_async(workflow_id)).get_result()
            # Recovery (what a crash leads to) needs the inputs and the steps' outputs: it cannot run.
            with pytest.raises(ConversationKeyErasedError):
                await reexecute_workflow(workflow_id)

            deleted = await delete_conversation_workflows(
                conversation_id, workflow_conversation=conversation_of_workflow
            )
            assert deleted == [workflow_id]
            assert await DBOS.list_workflows_async(workflow_ids=[workflow_id]) == []
            assert not [value for value in system_rows(dbos_system_db.url) if workflow_id in value]
    finally:
        serializer.close()
        await keys.aclose()
