"""Rendering user, system and tool parts: structured content, empty texts, instructions, tool outcomes and arguments."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import messages as m

from durable_recall.text import NO_TEXT, display_lines, index_text

from ._render_parts import PNG, UNITS, VALIDATION_ERROR, legacy_retry, request, response


class TestUserAndSystemParts:
    def test_structured_content_is_its_text(self) -> None:
        part = m.UserPromptPart([m.StructuredContent(value={'rows': [1, 2]}, tag='table', description='numbers')])
        assert index_text(request(part)) == 'numbers\n<table>{"rows":[1,2]}</table>'

    def test_empty_texts_give_no_line(self) -> None:
        message = request(m.SystemPromptPart(''), m.UserPromptPart('  '), m.UserPromptPart([m.CachePoint()]))
        assert index_text(message) == ''
        assert display_lines(message, set()) == [NO_TEXT]
        assert index_text(request()) == ''
        assert display_lines(request(), set()) == [NO_TEXT]

    def test_instruction_withdrawal_is_shown_not_indexed(self) -> None:
        message = request(m.InstructionDeltaPart(id=UNITS, content=None))
        assert index_text(message) == ''
        assert display_lines(message, set()) == ['Instructions [toolset:weather:units] withdrawn']

    def test_instruction_without_id(self) -> None:
        message = request(m.InstructionDeltaPart(id=None, content='Be brief.'))
        assert display_lines(message, set()) == ['Instructions: Be brief.']

    def test_parts_join_in_order(self) -> None:
        message = request(m.SystemPromptPart('Be brief.'), m.UserPromptPart('Where is\nthe zebra?'))
        assert index_text(message) == 'Be brief.\nWhere is\nthe zebra?'
        assert display_lines(message, set()) == ['System: Be brief.', 'User: Where is\nthe zebra?']


class TestToolParts:
    @pytest.mark.parametrize(
        ('outcome', 'label'),
        [('failed', 'Tool failed'), ('denied', 'Tool denied'), ('interrupted', 'Tool interrupted')],
    )
    def test_outcomes(self, outcome: Any, label: str) -> None:
        message = request(m.ToolReturnPart('deploy', 'permission refused', 'c1', outcome=outcome))
        assert index_text(message) == 'permission refused'
        assert display_lines(message, set()) == [f'{label} [deploy]: permission refused']

    def test_retried_return_with_message(self) -> None:
        part = m.ToolReturnPart(
            'read_file', 'path must be relative', 'c1', outcome='retried', retry=m.RetryInfo('model_retry')
        )
        assert index_text(request(part)) == 'path must be relative'
        assert display_lines(request(part), set()) == ['Retry [read_file]: path must be relative']

    def test_retried_return_with_validation_errors(self) -> None:
        part = m.ToolReturnPart('read_file', [VALIDATION_ERROR], 'c1', outcome='retried')
        assert index_text(request(part)) == '[{"type":"missing","loc":["city"],"msg":"Field required","input":{}}]'

    def test_structured_return(self) -> None:
        part = m.ToolReturnPart('lookup', {'customer_42': {'status': 'closed', 'owner': 'Zoë'}}, 'c1')
        assert index_text(request(part)) == '{"customer_42":{"status":"closed","owner":"Zoë"}}'

    def test_return_with_files_keeps_the_text(self) -> None:
        part = m.ToolReturnPart(
            'render', ['chart of sales', m.BinaryContent(data=PNG, media_type='image/png'), {'pages': 2}], 'c1'
        )
        assert index_text(request(part)) == 'chart of sales {"pages":2}'

    def test_empty_return_is_shown(self) -> None:
        message = request(m.ToolReturnPart('ping', None, 'c1'))
        assert index_text(message) == ''
        assert display_lines(message, set()) == ['Tool return [ping]:']

    @pytest.mark.parametrize(
        ('args', 'indexed', 'shown'),
        [
            (None, 'ping', 'Tool call ping()'),
            ('', 'ping', 'Tool call ping()'),
            ('{"host": "db-1"}', 'ping db-1', 'Tool call ping({"host":"db-1"})'),
            ('{not json', 'ping {not json', 'Tool call ping({"INVALID_JSON":"{not json"})'),
            (
                {'hosts': [{'name': 'db-1', 'port': 5432}, {'name': 'db-2', 'weight': 0.5}]},
                'ping db-1 5432 db-2 0.5',
                'Tool call ping({"hosts":[{"name":"db-1","port":5432},{"name":"db-2","weight":0.5}]})',
            ),
        ],
    )
    def test_call_arguments(self, args: Any, indexed: str, shown: str) -> None:
        message = response(m.ToolCallPart('ping', args, 'c1'))
        assert index_text(message) == indexed
        assert display_lines(message, set()) == [shown]

    def test_legacy_retry_without_a_tool(self) -> None:
        message = request(legacy_retry('Please answer in JSON.', None))
        assert display_lines(message, set()) == ['Retry: Please answer in JSON.']
