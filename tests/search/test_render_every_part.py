"""Every part type pydantic-ai defines, in index mode and display mode; a kind it adds later, shown generically."""

from __future__ import annotations

import typing
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from pydantic_ai import messages as m

from durable_recall.index import Bm25Params
from durable_recall.text import NO_TEXT, display_lines, index_text, tokenize

from .._capability_parts import HAS_CAPABILITY_PARTS
from ._oracle import rank
from ._render_parts import PNG, UNITS, VALIDATION_ERROR, legacy_retry, request, response


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


def test_cases_hold_one_part_each() -> None:
    for case in CASES.values():
        assert len(cast(list[Any], case.message.parts)) == 1
