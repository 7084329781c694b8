"""What rendering leaves out: compaction markers, harness summaries and receipts, the search tool's own calls."""

from __future__ import annotations

import pytest
from pydantic_ai import messages as m

from durable_recall.compaction import SlidingWindowCompaction
from durable_recall.text import (
    HARNESS_LEGACY_SUMMARY_PREFIX,
    HARNESS_RECEIPT_TAG,
    HARNESS_SUMMARY_KEY,
    NO_TEXT,
    SEARCH_TOOL_NAME,
    display_lines,
    index_text,
    is_compaction_receipt,
    is_summary_artifact,
)
from durable_recall.text._render import EARLIER_SEARCH

from ._render_parts import legacy_retry, request, response


class TestNeverIndexed:
    def test_compaction_marker(self) -> None:
        history: list[m.ModelMessage] = [request(m.UserPromptPart(f'turn {n}')) for n in range(5)]
        compacted = SlidingWindowCompaction(max_messages=2, preserve_first_user_message=False).compact(history)
        assert compacted is not None
        marker = compacted[0]
        assert 'search_conversation_history' in str(marker.parts[0])
        assert index_text(marker) == ''
        assert display_lines(marker, {'earlier'}) == [NO_TEXT]

    def test_harness_summary_part(self) -> None:
        part = m.CompactionPart(
            content='The user wants zebras.',
            metadata={HARNESS_SUMMARY_KEY: True, 'pydantic-ai-harness.compaction.summary.created_at': '2025-01-01'},
        )
        assert is_summary_artifact(part)
        message = request(part)
        assert index_text(message) == ''
        assert display_lines(message, {'zebras'}) == [NO_TEXT]

    @pytest.mark.parametrize(
        'part',
        [
            m.CompactionPart(content='Our own summary.', metadata={HARNESS_SUMMARY_KEY: 'true'}),
            m.CompactionPart(content='Our own summary.', metadata={'other': True}),
            m.CompactionPart(content='Our own summary.'),
        ],
    )
    def test_other_compaction_parts_are_content(self, part: m.CompactionPart) -> None:
        assert not is_summary_artifact(part)
        assert index_text(request(part)) == 'Our own summary.'

    def test_harness_summary_needs_content_and_no_provider(self) -> None:
        assert not is_summary_artifact(m.CompactionPart(content='', metadata={HARNESS_SUMMARY_KEY: True}))
        provider = m.CompactionPart(content='summary', metadata={HARNESS_SUMMARY_KEY: True}, provider_name='x')
        assert not is_summary_artifact(provider)

    def test_legacy_summary_prompt(self) -> None:
        artifact = m.SystemPromptPart(HARNESS_LEGACY_SUMMARY_PREFIX + 'The user wants zebras.')
        lookalike = m.SystemPromptPart('Summary of previous conversation: none yet.')
        assert is_summary_artifact(artifact) and not is_summary_artifact(lookalike)
        assert index_text(request(artifact, lookalike)) == 'Summary of previous conversation: none yet.'

    def test_receipt(self) -> None:
        receipt = m.UserPromptPart(
            [m.TextContent('[History before this point (12 messages) was dropped.]', metadata=HARNESS_RECEIPT_TAG)]
        )
        plain = m.UserPromptPart([m.TextContent('Where were we?', metadata='something else')])
        assert is_compaction_receipt(receipt) and not is_compaction_receipt(plain)
        assert not is_compaction_receipt(m.UserPromptPart('plain'))
        message = request(receipt, plain)
        assert index_text(message) == 'Where were we?'
        assert display_lines(message, set()) == ['User: Where were we?']

    def test_own_calls_and_returns(self) -> None:
        call = response(m.TextPart('Let me look.'), m.ToolCallPart(SEARCH_TOOL_NAME, {'query': 'zebra'}, 'c1'))
        result = request(m.ToolReturnPart(SEARCH_TOOL_NAME, "Found 1 match for 'zebra'", 'c1'))
        retried = request(m.ToolReturnPart(SEARCH_TOOL_NAME, 'query is required', 'c2', outcome='retried'))
        legacy = request(legacy_retry('query is required', SEARCH_TOOL_NAME))
        assert index_text(call) == 'Let me look.'
        assert display_lines(call, {'zebra'}) == ['Assistant: Let me look.']
        for message in (result, retried, legacy):
            assert index_text(message) == ''
            assert display_lines(message, {'zebra'}) == [EARLIER_SEARCH]

    def test_renamed_search_tool(self) -> None:
        skip = frozenset({'history_search_conversation_history'})
        call = response(m.ToolCallPart('history_search_conversation_history', {'query': 'zebra'}, 'c1'))
        assert index_text(call) == 'history_search_conversation_history zebra'
        assert index_text(call, skip_tools=skip) == ''
        assert display_lines(call, set(), skip_tools=skip) == [EARLIER_SEARCH]
        assert index_text(response(m.ToolCallPart(SEARCH_TOOL_NAME, {}, 'c2')), skip_tools=skip) == SEARCH_TOOL_NAME
