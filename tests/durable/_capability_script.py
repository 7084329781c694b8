"""A conversation whose first run carries a capability part (pydantic-ai 2.78), recalled after compaction.

`Reporter` enqueues a `JobReportPart` (a background job's result, as data from a tool) before the
first model request of a run whose prompt starts with `report:`. The sliding window then drops it,
and the last run searches for it. Everything is a function of the messages, as replay needs; the
part's `record_id` and `timestamp` are not (pydantic-ai makes them when the part is built), which
is what the content hash must not see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolResultSource
from pydantic_ai.models import ModelRequestContext

from durable_recall import StepStore

from .._capability_parts import JobReportPart
from ._recall_script import recall_capabilities

REPORT = 'the backup job wrote QUAGGA-7731 to vault 9'
TURNS = [
    'report: backup',
    'what is a parquet file?',
    'and what about avro?',
    'compare both briefly',
    'which one compresses better?',
    'thanks, noted',
    'recall: QUAGGA-7731 vault',
]
LABEL = 'Data [jobs.job_report, tool backup]: backup\n'


@dataclass
class Reporter(AbstractCapability[Any]):
    """Adds the backup job's report to the first request of a `report:` run."""

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if ctx.run_step == 1 and isinstance(ctx.prompt, str) and ctx.prompt.startswith('report:'):
            ctx.enqueue(JobReportPart(content=REPORT, job='backup', source=ToolResultSource(tool_name='backup')))
        return request_context


def capabilities(store: StepStore) -> list[Any]:
    return [*recall_capabilities(store), Reporter()]
