"""Rendering: every part type pydantic-ai defines, in index mode and display mode, and what is left out."""

from __future__ import annotations

import typing
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from pydantic_ai import PydanticAIDeprecationWarning
from pydantic_ai import messages as m

from durable_recall.compaction import SlidingWindowCompaction
from durable_recall.index import Bm25Params
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
    tokenize,
)
from durable_recall.text._render import EARLIER_SEARCH

from .._capability_parts import HAS_CAPABILITY_PARTS
from ._oracle import rank

PNG = b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR'
UNITS = m.InstructionId(m.ToolsetInstructionSource('weather'), name='units')


def legacy_retry(content: str | list[Any], tool_name: str | None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', PydanticAIDeprecationWarning)
        return m.RetryPromptPart(content=content, tool_name=tool_name)  # pyright: ignore[reportDeprecated]


def request(*parts: Any) -> m.ModelRequest:
    return m.ModelRequest(parts=list(parts))


def response(*parts: Any) -> m.ModelResponse:
    return m.ModelResponse(parts=list(parts))


@dataclass
class Case:
    message: m.ModelMessage
    indexed: str
    display: list[str] = field(default_factory=lambda: [NO_TEXT])

    @property
    def part_class(self) -> type:
        (part,) = self.message.parts
        # Capability parts are one union member, `CapabilityPart`, whatever kind a case defines.
        return m.CapabilityPart if getattr(part, 'part_kind', None) == 'capability' else type(part)


VALIDATION_ERROR: Any = {'type': 'missing', 'loc': ('city',), 'msg': 'Field required', 'input': {}, 'ctx': {'k': 1}}

CASES: dict[str, Case] = {
    'system prompt': Case(
        request(m.SystemPromptPart('Answer tersely.')), 'Answer tersely.', ['System: Answer tersely.']
    ),
    'user prompt': Case(
        request(
            m.UserPromptPart(
                [
                    'Compare',
                    m.ImageUrl(url='https://example.com/cat.png'),
                    m.TextContent('these charts', metadata={'source': 'app'}),
                    m.BinaryContent(data=PNG, media_type='image/png'),
                    m.CachePoint(),
                ]
            )
        ),
        'Compare these charts',
        ['User: Compare these charts'],
    ),
    'user speech': Case(
        request(m.SpeechPart(speaker='user', transcript='hello there')),
        'hello there',
        ['Speech [user]: hello there'],
    ),
    'tool search return': Case(
        request(
            m.ToolSearchReturnPart(
                content={'discovered_tools': [{'name': 'get_weather'}], 'message': 'found one'}, tool_call_id='c1'
            )
        ),
        '{"discovered_tools":[{"name":"get_weather"}],"message":"found one"}',
        ['Tool return [search_tools]: {"discovered_tools":[{"name":"get_weather"}],"message":"found one"}'],
    ),
    'load capability return': Case(
        request(m.LoadCapabilityReturnPart(content={'message': 'loaded maps'}, tool_call_id='c2')),
        '{"message":"loaded maps"}',
        ['Tool return [load_capability]: {"message":"loaded maps"}'],
    ),
    'tool return': Case(
        request(m.ToolReturnPart('read_file', 'def main(): pass', tool_call_id='c3')),
        'def main(): pass',
        ['Tool return [read_file]: def main(): pass'],
    ),
    'legacy retry prompt': Case(
        request(legacy_retry('file not found', 'read_file')),
        'file not found',
        ['Retry [read_file]: file not found'],
    ),
    'retry feedback': Case(
        request(m.RetryFeedbackPart(content=[VALIDATION_ERROR], retry=m.RetryInfo('validation_error'))),
        '[{"type":"missing","loc":["city"],"msg":"Field required","input":{}}]',
        ['Retry: [{"type":"missing","loc":["city"],"msg":"Field required","input":{}}]'],
    ),
    'tool availability delta': Case(request(m.ToolAvailabilityDeltaPart(tools_added=['maps_route'])), ''),
    'model settings delta': Case(request(m.ModelSettingsDeltaPart(settings={'thinking': 'high'})), ''),
    'instruction delta': Case(
        request(m.InstructionDeltaPart(id=UNITS, content='Use Celsius.')),
        'Use Celsius.',
        ['Instructions [toolset:weather:units]: Use Celsius.'],
    ),
    'instruction baseline': Case(
        request(
            m.InstructionBaselinePart(
                instructions=[
                    m.InstructionPart('Answer in French.', on_change='append', id=UNITS),
                    m.InstructionDigest(content_hash='ab' * 32),
                ]
            )
        ),
        '',
    ),
    'application compaction summary': Case(
        request(m.CompactionPart(content='Earlier we chose PostgreSQL.')),
        'Earlier we chose PostgreSQL.',
        ['Summary: Earlier we chose PostgreSQL.'],
    ),
    'text': Case(response(m.TextPart('The answer is 42.')), 'The answer is 42.', ['Assistant: The answer is 42.']),
    'tool search call': Case(
        response(m.ToolSearchCallPart(args={'queries': ['weather']}, tool_call_id='c1')),
        'search_tools weather',
        ['Tool call search_tools({"queries":["weather"]})'],
    ),
    'load capability call': Case(
        response(m.LoadCapabilityCallPart(args={'id': 'maps'}, tool_call_id='c2')),
        'load_capability maps',
        ['Tool call load_capability({"id":"maps"})'],
    ),
    'tool call': Case(
        response(
            m.ToolCallPart(
                'read_file', {'path': 'src/app/main.py', 'max_lines': 20, 'follow': True, 'encoding': None}, 'c3'
            )
        ),
        'read_file src/app/main.py 20',
        ['Tool call read_file({"path":"src/app/main.py","max_lines":20,"follow":true,"encoding":null})'],
    ),
    'native tool search call': Case(
        response(m.NativeToolSearchCallPart(args={'queries': ['maps']}, tool_call_id='n1')), ''
    ),
    'native tool call': Case(
        response(m.NativeToolCallPart('web_search', {'query': 'paris'}, 'n2', provider_name='openai')), ''
    ),
    'native tool search return': Case(
        response(m.NativeToolSearchReturnPart(content={'discovered_tools': [{'name': 'maps'}]}, tool_call_id='n1')),
        '',
    ),
    'native tool return': Case(
        response(m.NativeToolReturnPart('web_search', {'results': ['paris']}, 'n2', provider_name='openai')), ''
    ),
    'thinking': Case(response(m.ThinkingPart('Let me weigh the zebra option.')), ''),
    'provider compaction': Case(
        response(m.CompactionPart(content='provider summary', id='cmp-1', provider_name='anthropic')), ''
    ),
    'file': Case(response(m.FilePart(content=m.BinaryContent(data=PNG, media_type='image/png'))), ''),
    'assistant speech': Case(
        response(m.SpeechPart(speaker='assistant', transcript='bonjour')), 'bonjour', ['Speech [assistant]: bonjour']
    ),
}
if hasattr(m, 'CapabilityLoadDeltaPart'):  # newer than pydantic-ai-slim 2.62, which the suite also runs on
    CASES['capability load delta'] = Case(request(m.CapabilityLoadDeltaPart(loaded=['maps'])), '')
if HAS_CAPABILITY_PARTS:  # pydantic-ai-slim>=2.78
    from .._capability_parts import capability_parts

    _report, _note, _request_note, _judge, _user_data, _own = capability_parts()
    CASES.update(
        {
            'capability data from a tool': Case(
                request(_report),
                'nightly\nnightly build wrote QUAGGA-7731',
                ['Data [jobs.job_report, tool build]: nightly\nnightly build wrote QUAGGA-7731'],
            ),
            'capability instruction': Case(
                request(_note),
                'Two requests left.',
                ['Instructions [budget.note_to_model, operator]: Two requests left.'],
            ),
            'request-scoped capability instruction': Case(request(_request_note), ''),
            'capability data from a model, content items': Case(
                request(_judge),
                'a judge said score\n<verdict>{"score":7}</verdict>',
                ['Data [jobs.any_data, model trajectory judge]: a judge said score\n<verdict>{"score":7}</verdict>'],
            ),
            'capability data from the user': Case(
                request(_user_data), 'typed earlier by hand', ['Data [jobs.any_data, user]: typed earlier by hand']
            ),
            'our own recall part': Case(request(_own), ''),
        }
    )


def union_classes(alias: Any) -> set[type]:
    """The classes of an `Annotated[Union[Annotated[cls, ...], ...], Discriminator]` alias."""
    union = typing.get_args(alias)[0]
    classes: set[type] = set()
    for member in typing.get_args(union):
        classes.add(typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member)
    return classes


class TestEveryPartType:
    def test_every_defined_part_class_has_a_case(self) -> None:
        # A part type added by a later pydantic-ai fails here until its treatment is decided.
        request_classes = {case.part_class for case in CASES.values() if isinstance(case.message, m.ModelRequest)}
        response_classes = {case.part_class for case in CASES.values() if isinstance(case.message, m.ModelResponse)}
        assert union_classes(m.ModelRequestPart) - request_classes == set()
        assert union_classes(m.ModelResponsePart) - response_classes == set()

    @pytest.mark.parametrize('name', list(CASES))
    def test_index_text(self, name: str) -> None:
        case = CASES[name]
        assert index_text(case.message) == case.indexed

    @pytest.mark.parametrize('name', list(CASES))
    def test_display_lines(self, name: str) -> None:
        case = CASES[name]
        assert display_lines(case.message, set()) == case.display

    def test_role_words_are_not_tokens(self) -> None:
        corpus = [tokenize(index_text(case.message)) for case in CASES.values()]
        role_words = {'user', 'assistant', 'system', 'tool', 'call', 'return', 'retry', 'summary', 'speech'}
        role_words |= {'instructions', 'context', 'id', 'path', 'max_lines', 'queries'}
        assert role_words & {term for doc in corpus for term in doc} == set()

    def test_query_user_matches_only_what_says_user(self) -> None:
        messages = [case.message for case in CASES.values()] + [request(m.UserPromptPart('which user asked?'))]
        docs = [tokenize(index_text(message)) for message in messages]
        ranked = rank(['user'], [Counter(doc) for doc in docs], [len(doc) for doc in docs], Bm25Params())
        assert [index for index, _ in ranked] == [len(messages) - 1]

    def test_a_part_kind_this_version_does_not_know_is_indexed_and_shown_generically(self) -> None:
        @dataclass
        class FuturePart:
            content: str = 'from the future'
            caption: str = 'a striped zebra'
            id: str = 'f-1'
            part_kind: str = 'future'

        for message in (request(FuturePart()), response(FuturePart())):
            assert index_text(message) == 'from the future\na striped zebra'
            assert display_lines(message, {'zebra'}) == ['Part [future]: from the future\na striped zebra']


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


class TestDisplayClipping:
    def test_long_user_text(self) -> None:
        text = 'lorem ' * 100 + 'ZEBRA ' + 'lorem ' * 100
        (line,) = display_lines(request(m.UserPromptPart(text)), {'zebra'})
        assert line.startswith('User: ...')
        assert len(line) == len('User: ') + 506
        assert line.index('ZEBRA') == len('User: ') + 253
        assert index_text(request(m.UserPromptPart(text))) == text

    def test_system_text_is_clipped_shorter(self) -> None:
        text = 'lorem ' * 100
        (line,) = display_lines(request(m.SystemPromptPart(text)), set())
        assert line == 'System: ' + text[:200] + '...'

    def test_tool_call_arguments_are_clipped_shorter(self) -> None:
        args = {'body': 'lorem ' * 50 + 'ZEBRA ' + 'lorem ' * 50}
        message = response(m.ToolCallPart('write', args, 'c1'))
        (line,) = display_lines(message, {'zebra'})
        assert line.startswith('Tool call write(...') and line.endswith('...)')
        assert len(line) == len('Tool call write(') + 206 + 1
        assert 'ZEBRA' in line
        assert index_text(message) == 'write ' + args['body']

    def test_each_part_is_clipped_around_its_rarest_term(self) -> None:
        text = 'the ' + 'lorem ' * 100 + 'ZEBRA ' + 'lorem ' * 100
        message = request(m.UserPromptPart(text))
        assert 'ZEBRA' in display_lines(message, {'the', 'zebra'}, rarity={'the': 0.1, 'zebra': 2.0})[0]
        assert 'ZEBRA' not in display_lines(message, {'the', 'zebra'})[0]


def test_cases_hold_one_part_each() -> None:
    for case in CASES.values():
        assert len(cast(list[Any], case.message.parts)) == 1
