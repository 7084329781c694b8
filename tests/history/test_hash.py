"""`message_hash`: equal for the same message however it was re-stamped, different for different content."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ModelSettingsDeltaPart,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ToolAvailabilityDeltaPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from durable_recall.base import dump_messages
from durable_recall.history import message_hash, message_hashes

from .._capability_parts import HAS_CAPABILITY_PARTS, NEEDS_CAPABILITY_PARTS
from ._messages import BASE, call, restamped, tick, tool_return, user, with_delta


def test_request_stamps_and_appended_records_are_ignored() -> None:
    request = ModelRequest(
        parts=[
            SystemPromptPart('be kind', timestamp=tick()),
            UserPromptPart('hello', timestamp=tick()),
            RetryFeedbackPart('try again', retry=RetryInfo('model_retry'), timestamp=tick()),
        ],
        timestamp=tick(),
    )
    stamped = replace(
        request,
        parts=[
            *(replace(part, timestamp=tick()) for part in request.parts),
            ToolAvailabilityDeltaPart(tools_added=['search']),
            ModelSettingsDeltaPart(settings={'thinking': 'high'}),
        ],
        timestamp=tick(),
        run_id='run-2',
        conversation_id='conv-2',
        instructions='Answer briefly.',
        state='interrupted',
        metadata={'__pydantic_ai__': {'context_input_tokens': 12}},
    )

    assert message_hash(stamped) == message_hash(request)
    assert message_hash(with_delta(request)) == message_hash(request)
    assert message_hash(restamped(request)) == message_hash(request)


def test_response_stamps_are_ignored_but_what_the_model_said_counts() -> None:
    response = call('c1')
    assert message_hash(replace(response, timestamp=tick(), run_id='other', conversation_id='c')) == message_hash(
        response
    )
    assert message_hash(replace(response, state='interrupted')) == message_hash(response)

    for changed in (
        replace(response, usage=RequestUsage(input_tokens=5)),
        replace(response, model_name='other-model'),
        replace(response, provider_response_id='resp_1'),
        replace(response, parts=[TextPart('different')]),
    ):
        assert message_hash(changed) != message_hash(response)


def test_content_and_application_metadata_count() -> None:
    prompt = user('hello')
    assert message_hash(user('hello')) == message_hash(prompt)  # part timestamps are not content
    assert message_hash(user('hello!')) != message_hash(prompt)
    assert message_hash(replace(prompt, metadata={'app': 1})) != message_hash(prompt)
    assert message_hash(tool_return('c1', 'x')) != message_hash(tool_return('c2', 'x'))
    assert message_hash(tool_return('c1', 'x')) != message_hash(tool_return('c1', 'y'))


def test_batch_hashes_equal_single_hashes() -> None:
    messages = [user('a'), call('c1'), tool_return('c1')]
    assert message_hashes(messages) == [message_hash(message) for message in messages]
    assert message_hashes([]) == []


def test_hash_is_stable_across_processes() -> None:
    # A fresh interpreter with a different hash seed must give the same digest.
    code = (
        'from datetime import datetime, UTC\n'
        'from pydantic_ai.messages import ModelRequest, UserPromptPart\n'
        'from durable_recall.history import message_hash\n'
        "m = ModelRequest(parts=[UserPromptPart('héllo', timestamp=datetime(2025, 1, 1, tzinfo=UTC))],"
        " metadata={'b': 1, 'a': [1, 2]})\n"
        'print(message_hash(m))\n'
    )
    here = ModelRequest(parts=[UserPromptPart('héllo', timestamp=BASE)], metadata={'a': [1, 2], 'b': 1})
    there = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, check=True, env={'PYTHONHASHSEED': '123'}
    )
    assert there.stdout.strip() == message_hash(here)
    assert len(message_hash(here)) == 32


def test_a_response_without_parts_hashes() -> None:
    assert message_hash(ModelResponse(parts=[], timestamp=BASE)) == message_hash(ModelResponse(parts=[]))


@pytest.mark.skipif(not HAS_CAPABILITY_PARTS, reason=NEEDS_CAPABILITY_PARTS)
class TestCapabilityParts:
    """A capability part hashes by what it says, not by the ids and stamps made each time it is built."""

    def test_generated_ids_and_stamps_are_ignored(self) -> None:
        from pydantic_ai.messages import ToolResultSource

        from .._capability_parts import JobReportPart

        def report(content: str) -> ModelRequest:
            source = ToolResultSource(tool_name='build')
            return ModelRequest(parts=[JobReportPart(content=content, job='nightly', source=source)])

        first, again = report('ZEBRA-1 built'), report('ZEBRA-1 built')
        again.parts[0].capability_id = 'capability-run-2'  # type: ignore[union-attr]
        assert first.parts[0].record_id != again.parts[0].record_id  # type: ignore[union-attr]
        assert message_hash(first) == message_hash(again)
        assert message_hash(first) != message_hash(report('ZEBRA-2 built'))

        # Loaded without `record_id` or `timestamp`, pydantic-ai makes fresh ones: the same hash.
        dumped = ModelMessagesTypeAdapter.dump_python([first], mode='json')
        for part in dumped[0]['parts']:
            del part['record_id'], part['timestamp']
        [loaded] = ModelMessagesTypeAdapter.validate_python(dumped)
        assert message_hash(loaded) == message_hash(first)

    def test_an_unregistered_kind_hashes_as_the_registered_one(self) -> None:
        from .._capability_parts import capability_parts

        # A process that does not import the module defining a kind loads its parts as
        # `UnknownCapabilityPart`; a worker and a search process must agree on the hash.
        script = (
            'import sys\n'
            'from durable_recall.base import load_messages\n'
            'from durable_recall.history import message_hash\n'
            '[message] = load_messages([sys.stdin.read()])\n'
            'print(type(message.parts[0]).__name__, message_hash(message))\n'
        )
        request = ModelRequest(parts=[capability_parts()[0]])
        [body] = dump_messages([request])
        result = subprocess.run(
            [sys.executable, '-W', 'error', '-c', script], input=body, capture_output=True, text=True, check=True
        )
        assert result.stdout.split() == ['UnknownCapabilityPart', message_hash(request)]


def test_a_responses_request_time_and_duration_are_stamps() -> None:
    # pydantic-ai 2.78 stamps when a request was sent and how long the model took on the response
    # (its own equality leaves them out); a re-sent request gets new ones.
    response = call('c1')
    if not hasattr(response, 'duration'):
        pytest.skip('needs pydantic-ai-slim>=2.78 (response timing fields)')
    from datetime import timedelta

    stamped = replace(response, request_timestamp=tick(), duration=timedelta(milliseconds=731))
    assert message_hash(stamped) == message_hash(response)
