"""A conversation that holds every message part and user-content type pydantic-ai defines.

The classes are enumerated from pydantic-ai's own discriminated unions, so a part type added by a
future release shows up in `defined_part_classes()` and fails the coverage assertion until a
message here carries it.
"""

from __future__ import annotations

import typing
import warnings
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import PydanticAIDeprecationWarning
from pydantic_ai import messages as m
from pydantic_ai.usage import RequestUsage

from .._capability_parts import HAS_CAPABILITY_PARTS

AT = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
PNG = b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01'

_HAS_LOAD_DELTA = hasattr(m, 'CapabilityLoadDeltaPart')
"""`CapabilityLoadDeltaPart` and `SpeechPart.timestamps` are newer than pydantic-ai-slim 2.62, which CI also runs on."""


def _speech_timestamps() -> dict[str, Any]:
    if not hasattr(m, 'SpeechTimestamp'):
        return {}
    return {'timestamps': [m.SpeechTimestamp(text='hello', start_ms=0, duration_ms=300)]}


LEGACY_PART_CLASSES: frozenset[type] = frozenset({m.RetryPromptPart})  # pyright: ignore[reportDeprecated]
"""Parts pydantic-ai translates when it loads them, so they read back as their translation."""


def _union_members(alias: Any) -> list[type]:
    """The classes of an `Annotated[Union[Annotated[cls, ...], ...], Discriminator]` alias."""
    union = typing.get_args(alias)[0]
    members: list[type] = []
    for member in typing.get_args(union):
        cls = typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member
        members.append(cls)
    return members


def defined_part_classes() -> set[type]:
    """Every request and response part class, including typed subclasses."""
    return set(_union_members(m.ModelRequestPart)) | set(_union_members(m.ModelResponsePart))


def defined_content_classes() -> set[type]:
    """Every non-string user-content class (multimodal content, text content, cache points)."""
    classes = set(_union_members(m.MultiModalContent))
    for member in typing.get_args(m.UserContent):
        if isinstance(member, type) and member is not str:
            classes.add(member)
    return classes


def used_classes(messages: list[m.ModelMessage]) -> tuple[set[type], set[type]]:
    """The part classes and user-content classes (base classes included) the messages carry."""
    parts: set[type] = set()
    contents: set[type] = set()
    for message in messages:
        for part in message.parts:
            parts.update(type(part).__mro__)
            if isinstance(part, m.UserPromptPart) and not isinstance(part.content, str):
                for item in part.content:
                    contents.update(type(item).__mro__)
            if isinstance(part, m.BaseToolReturnPart) and isinstance(part.content, list):
                for item in typing.cast(list[Any], part.content):
                    contents.update(type(item).__mro__)
    return parts, contents


def every_part_conversation() -> list[m.ModelMessage]:
    """Messages that together carry every part class and content class, in realistic shapes."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', PydanticAIDeprecationWarning)
        legacy_retry = m.RetryPromptPart(  # pyright: ignore[reportDeprecated]
            content='legacy: try again', tool_name='get_weather', tool_call_id='call-legacy', timestamp=AT
        )
    return [
        m.ModelRequest(
            parts=[
                m.SystemPromptPart(content='You are terse.', timestamp=AT),
                m.InstructionBaselinePart(
                    instructions=[
                        m.InstructionPart(
                            content='Answer in French.',
                            on_change='append',
                            id=m.InstructionId(m.AgentInstructionSource(), name='lang'),
                        ),
                        m.InstructionDigest(content_hash='ab' * 32, dynamic=True),
                    ]
                ),
                m.InstructionDeltaPart(
                    id=m.InstructionId(m.ToolsetInstructionSource('weather'), name='units'), content='Use Celsius.'
                ),
                m.UserPromptPart(content='plain text prompt with ünïcödé and "quotes" \u0000 nul', timestamp=AT),
                m.UserPromptPart(
                    content=[
                        'a string item',
                        m.TextContent(content='text content', metadata={'source': 'notes'}),
                        m.StructuredContent(value={'rows': [1, 2, 3]}, tag='table', description='numbers'),
                        m.ImageUrl(url='https://example.com/cat.png'),
                        m.AudioUrl(url='https://example.com/a.mp3'),
                        m.DocumentUrl(url='https://example.com/d.pdf'),
                        m.VideoUrl(url='https://example.com/v.mp4'),
                        m.BinaryContent(data=PNG, media_type='image/png'),
                        m.BinaryContent(data=b'RIFF\x00\x00WAVE', media_type='audio/wav'),
                        m.BinaryContent(data=b'%PDF-1.4', media_type='application/pdf'),
                        m.UploadedFile(file_id='file-123', provider_name='openai'),
                        m.CachePoint(),
                    ],
                    timestamp=AT,
                ),
                m.SpeechPart(
                    speaker='user',
                    transcript='hello there',
                    audio=m.BinaryContent(data=b'RIFF\x01\x02WAVE', media_type='audio/wav'),
                    **_speech_timestamps(),
                ),
            ],
            timestamp=AT,
            instructions='Answer in French.',
            run_id='run-1',
            conversation_id='conv-1',
            metadata={'k': 'v'},
        ),
        *_capability_requests(),
        m.ModelResponse(
            parts=[
                m.ThinkingPart(content='Let me think.', signature='sig', provider_name='anthropic'),
                m.TextPart(
                    content='Looking it up.',
                    citations=[
                        m.Citation(
                            sources=[m.WebCitationSource(url='https://example.com', title='Ex', excerpts=['e'])],
                            anchor=m.ContentCitationAnchor(start=0, end=7),
                        ),
                        m.Citation(sources=[m.DocumentCitationSource(document_id='doc-1')]),
                    ],
                ),
                m.ToolCallPart(tool_name='get_weather', args={'city': 'Paris', 'days': [1, 2]}, tool_call_id='call-1'),
                m.ToolCallPart(tool_name='get_time', args='{"tz": "UTC"}', tool_call_id='call-2'),
                m.ToolCallPart(tool_name='no_args', args=None, tool_call_id='call-3'),
                m.ToolSearchCallPart(args={'queries': ['weather']}, tool_call_id='call-search'),
                m.LoadCapabilityCallPart(args={'id': 'maps'}, tool_call_id='call-load'),
                m.NativeToolCallPart(
                    tool_name='web_search', args={'query': 'paris'}, tool_call_id='native-1', provider_name='openai'
                ),
                m.NativeToolReturnPart(
                    tool_name='web_search',
                    content={'results': [{'url': 'https://example.com'}]},
                    tool_call_id='native-1',
                    timestamp=AT,
                    provider_name='openai',
                ),
                m.NativeToolSearchCallPart(args={'queries': ['maps']}, tool_call_id='native-search'),
                m.NativeToolSearchReturnPart(
                    content={'discovered_tools': [{'name': 'maps'}], 'message': 'found 1'},
                    tool_call_id='native-search',
                    timestamp=AT,
                ),
                m.FilePart(content=m.BinaryContent(data=PNG, media_type='image/png'), id='file-part'),
                m.CompactionPart(content='summary of earlier turns', id='cmp-1', provider_name='openai'),
                m.SpeechPart(speaker='assistant', transcript='bonjour'),
            ],
            usage=RequestUsage(input_tokens=10, output_tokens=20),
            model_name='test-model',
            timestamp=AT,
            provider_name='test',
            provider_response_id='resp-1',
            finish_reason='tool_call',
            run_id='run-1',
        ),
        m.ModelRequest(
            parts=[
                m.ToolReturnPart(
                    tool_name='get_weather', content={'temp_c': 21, 'sky': 'clear'}, tool_call_id='call-1', timestamp=AT
                ),
                m.ToolReturnPart(tool_name='get_time', content='12:00', tool_call_id='call-2', timestamp=AT),
                m.ToolReturnPart(
                    tool_name='no_args',
                    content=['a list', m.ImageUrl(url='https://example.com/x.png', media_type='image/png')],
                    tool_call_id='call-3',
                    timestamp=AT,
                ),
                m.ToolReturnPart(
                    tool_name='denied_tool',
                    content='The user denied this call.',
                    tool_call_id='call-4',
                    outcome='denied',
                    timestamp=AT,
                ),
                m.ToolReturnPart(
                    tool_name='failing_tool', content='boom', tool_call_id='call-5', outcome='failed', timestamp=AT
                ),
                m.ToolReturnPart(
                    tool_name='get_weather',
                    content='city is required',
                    tool_call_id='call-6',
                    outcome='retried',
                    retry=m.RetryInfo('validation_error', attempt=1, max_retries=3),
                    timestamp=AT,
                ),
                m.ToolSearchReturnPart(
                    content={'discovered_tools': [{'name': 'get_weather'}], 'message': 'found 1 tool'},
                    tool_call_id='call-search',
                    timestamp=AT,
                ),
                m.LoadCapabilityReturnPart(
                    content={'message': 'loaded maps', 'instructions': 'Use maps for directions.'},
                    tool_call_id='call-load',
                    timestamp=AT,
                ),
                m.ToolAvailabilityDeltaPart(tools_added=['maps_route'], tool_call_id='call-load'),
                *([m.CapabilityLoadDeltaPart(loaded=['maps'], tool_call_id='call-load')] if _HAS_LOAD_DELTA else []),
                m.ModelSettingsDeltaPart(settings={'thinking': 'high'}),
                m.RetryFeedbackPart(
                    content='Please answer with JSON.', retry=m.RetryInfo('no_output', attempt=2), timestamp=AT
                ),
                m.CompactionPart(content='request-side compaction'),
                legacy_retry,
            ],
            timestamp=AT,
        ),
    ]


def _capability_requests() -> list[m.ModelMessage]:
    """A request of capability parts (pydantic-ai-slim>=2.78), one of each shape."""
    if not HAS_CAPABILITY_PARTS:
        return []
    from .._capability_parts import capability_parts

    return [m.ModelRequest(parts=capability_parts(), timestamp=AT)]
