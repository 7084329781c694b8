"""Capability part kinds for the tests (pydantic-ai 2.78's `CapabilityPart`), registered on import.

On an older pydantic-ai, which has no capability parts, `HAS_CAPABILITY_PARTS` is false and the
builders are not defined: tests that need them skip with `NEEDS_CAPABILITY_PARTS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import messages as m

HAS_CAPABILITY_PARTS = hasattr(m, 'CapabilityPart')
NEEDS_CAPABILITY_PARTS = 'needs capability parts (pydantic-ai-slim>=2.78)'
AT = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)

if HAS_CAPABILITY_PARTS:

    @dataclass(kw_only=True, repr=False)
    class JobReportPart(m.DataCapabilityPart[str], namespace='jobs', tag='job_report', attributes=('job',)):
        """A background job's report, with the job's name as a rendered attribute."""

        job: str | None = None

    @dataclass(kw_only=True, repr=False)
    class NoteToModelPart(m.InstructionCapabilityPart, namespace='budget'):
        """An instruction in the application's voice."""

    @dataclass(kw_only=True, repr=False)
    class AnyDataPart(m.DataCapabilityPart, namespace='jobs', tag='any_data'):
        """Data whose content may be text, structured content or a list of user content."""

    @dataclass(kw_only=True, repr=False)
    class OwnRecallPart(m.DataCapabilityPart[str], namespace='durable_recall', tag='recalled'):
        """A part of this library's own namespace: a recall excerpt, never indexed."""

    def fixed(part: Any) -> Any:
        """`part` with a fixed record id and timestamp, so that equal parts compare equal."""
        part.record_id = '01900000-0000-7000-8000-000000000001'
        part.timestamp = AT
        return part

    def capability_parts() -> list[Any]:
        """One part of each shape the renderer branches on."""
        return [
            fixed(
                JobReportPart(
                    content='nightly build wrote QUAGGA-7731',
                    job='nightly',
                    source=m.ToolResultSource(tool_name='build', tool_call_id='call-b'),
                    capability_id='jobs-cap',
                )
            ),
            fixed(NoteToModelPart(content='Two requests left.', source=m.OperatorSource())),
            fixed(NoteToModelPart(content='Only this request.', source=m.OperatorSource(), scope='request')),
            fixed(
                AnyDataPart(
                    content=[
                        'a judge said',
                        m.StructuredContent(value={'score': 7}, tag='verdict', description='score'),
                        m.ImageUrl(url='https://example.com/cat.png'),
                    ],
                    source=m.ModelSource('trajectory judge'),
                )
            ),
            fixed(AnyDataPart(content='typed earlier by hand', source=m.UserSource())),
            fixed(OwnRecallPart(content='recalled: QUAGGA-7731', source=m.OperatorSource())),
        ]
