"""`search --embedder MODEL`: hybrid ranking with the model of the user's choice that `index --embedder` used.

The name `test:concepts` resolves (through pydantic-ai's model inference, patched by `conftest`'s
`models` fixture) to the hybrid tests' keyword model, which embeds a paraphrase close to the words
it paraphrases: "vehicle" finds "automobile", which shares no word with it and which BM25 alone
does not find. Its calls are counted, so a search after `index --embedder` is seen to embed its
query and no message.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import SqliteConversationStore, SqliteStepStore

from ..hybrid._kit import EXCHANGES, ConceptEmbeddingModel, chat, needs_numpy
from ._support import run_cli
from .test_errors import assert_one_line_error

pytestmark = needs_numpy

CONVERSATION = 'c1'
PARAPHRASED = 'I finally bought a red automobile yesterday'
"""The message a search for "vehicle" finds by meaning alone."""


def blocks(answer: str) -> list[str]:
    """The answer's result blocks, best first."""
    return [block for block in answer.split('\n\n---\n\n') if '[score:' in block]


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A step store holding `EXCHANGES`, one run each, not indexed yet."""
    path = tmp_path / 'steps.db'

    async def write() -> None:
        steps = SqliteStepStore(path)
        try:
            await chat(steps, EXCHANGES, conversation_id=CONVERSATION, index=False)
        finally:
            await steps.aclose()

    asyncio.run(write())
    return str(path)


def test_after_index_embedder_a_search_finds_a_paraphrase_and_embeds_only_its_query(
    store: str, capsys: pytest.CaptureFixture[str], models: dict[str, ConceptEmbeddingModel]
) -> None:
    base = ['search', '--store', store, '--conversation', CONVERSATION, '--context-lines', '0', 'vehicle']
    indexed = run_cli(
        capsys, ['index', '--store', store, '--conversation', CONVERSATION, '--embedder', 'test:concepts']
    )
    assert (indexed.status, indexed.err) == (0, ''), indexed.err
    assert len(models['concepts'].documents) == 2 * len(EXCHANGES)

    result = run_cli(capsys, [*base, '--embedder', 'test:concepts'])
    assert (result.status, result.err) == (0, ''), result.err
    assert PARAPHRASED in blocks(result.out)[0]
    searching = models['concepts']  # the search's own `Embedder` of the same model
    assert (searching.documents, searching.queries) == ([], ['vehicle'])

    lexical = run_cli(capsys, base)
    assert lexical.status == 0
    assert 'automobile' not in lexical.out, 'BM25 alone found it: the test shows no paraphrase'

    document = json.loads(
        run_cli(capsys, [*base, '--embedder', 'test:concepts', '--hybrid-weight', '0.7', '--json']).out
    )
    assert (document['ranking'], document['hybrid_weight'], document['embedder']) == ('hybrid', 0.7, 'test:concepts')
    assert PARAPHRASED in blocks(document['answer'])[0]
    assert models['concepts'].documents == []
    assert json.loads(run_cli(capsys, [*base, '--json']).out)['embedder'] is None


def test_a_search_embeds_what_index_did_not(
    store: str, capsys: pytest.CaptureFixture[str], models: dict[str, ConceptEmbeddingModel]
) -> None:
    argv = ['search', '--store', store, '--conversation', CONVERSATION, '--context-lines', '0', 'vehicle']
    first = run_cli(capsys, [*argv, '--embedder', 'test:concepts'])
    assert first.status == 0 and PARAPHRASED in blocks(first.out)[0]
    assert len(models['concepts'].documents) == 2 * len(EXCHANGES)  # stored under the model's name...
    again = run_cli(capsys, [*argv, '--embedder', 'test:concepts'])
    assert again.out == first.out
    assert models['concepts'].documents == []  # ...and read by the next search


def test_a_failing_embedder_leaves_the_tools_note_and_a_bm25_answer(
    store: str, capsys: pytest.CaptureFixture[str], models: dict[str, ConceptEmbeddingModel]
) -> None:
    argv = ['search', '--store', store, '--conversation', CONVERSATION, 'quarterly report']
    result = run_cli(capsys, [*argv, '--embedder', 'test:down'])
    assert result.status == 0
    assert 'ranking by meaning was unavailable for this search (ConnectionError)' in result.out
    assert 'quarterly report' in blocks(result.out)[0]


@pytest.mark.parametrize(
    ('flags', 'says'),
    [
        (['--ranking', 'bm25', '--embedder', 'test:concepts'], '--embedder implies --ranking hybrid'),
        (['--embedder', ' '], 'argument --embedder: is empty: pass a pydantic-ai embedding model name'),
    ],
)
def test_usage_errors(store: str, capsys: pytest.CaptureFixture[str], flags: list[str], says: str) -> None:
    result = run_cli(capsys, ['search', '--store', store, '--conversation', CONVERSATION, 'vehicle', *flags])
    assert_one_line_error(result, says, status=2)


def test_a_name_pydantic_ai_cannot_use_is_one_line(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ['search', '--store', store, '--conversation', CONVERSATION, 'vehicle']
    assert_one_line_error(
        run_cli(capsys, [*argv, '--embedder', 'text-embedding-3-small']),
        "--embedder 'text-embedding-3-small': You must provide a provider prefix",
        'such as openai:text-embedding-3-small',
    )


def test_a_conversation_store_is_searched_with_the_model_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: dict[str, ConceptEmbeddingModel]
) -> None:
    """A conversation store keeps no vectors: the search embeds its scope in process, as its hybrid search does."""
    from pydantic_ai.conversation import Conversation

    path = tmp_path / 'conversations.db'
    replies = iter(answer for _, answer in EXCHANGES)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(next(replies))])

    async def write() -> None:
        conversations = SqliteConversationStore(database=path)
        agent = Agent(FunctionModel(model))
        try:
            for said, _ in EXCHANGES:
                conversation = await conversations.load(CONVERSATION) or Conversation(conversation_id=CONVERSATION)
                await conversations.save(await agent.run(said, conversation=conversation))
        finally:
            await conversations.aclose()

    asyncio.run(write())
    argv = ['search', '--store', str(path), '--conversation', CONVERSATION, '--context-lines', '0', 'dog']
    result = run_cli(capsys, [*argv, '--embedder', 'test:concepts'])
    assert (result.status, result.err) == (0, ''), result.err
    assert 'puppy named Biscuit' in blocks(result.out)[0]
    assert len(models['concepts'].documents) == 2 * len(EXCHANGES)
    assert 'puppy' not in run_cli(capsys, argv).out, 'BM25 alone found it: the test shows no paraphrase'
