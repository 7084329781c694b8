"""The demo's conversation: a support ticket whose key detail compaction drops and search brings back.

The scripted model is a pydantic-ai `FunctionModel` that behaves like a small, plausible support
agent and is deterministic (its reply depends only on the messages it is sent), so the demo runs
offline, with no API key, and replays identically under Temporal. The user's prompts are the
same for a real model (`--model`): the last one asks for the detail the first one gave.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ..text import SEARCH_TOOL_NAME
from ._parser import MAX_TURNS, MIN_TURNS

__all__ = (
    'AGENT_NAME',
    'DETAIL',
    'INSTRUCTIONS',
    'JOB_TOOL_NAME',
    'WINDOW',
    'check_export_job',
    'prompts',
    'scripted_model',
)

AGENT_NAME = 'support_demo'
"""The demo agent's name; Temporal activity and DBOS step names derive from it."""

DETAIL = 's3://acme-billing-exports/nightly/2026-11/'
"""What the first turn says, compaction later drops, and the last turn needs back verbatim."""

WINDOW = 8
"""`SlidingWindowCompaction(max_messages=...)`, cutting back to half: small, so the first turn leaves early."""

INSTRUCTIONS = (
    'You are a concise support engineer for Acme Cloud data pipelines. Answer in two or three sentences. '
    'When the customer asks about something they told you earlier that is no longer in your context, '
    'recall it with the history search tool and quote it exactly.'
)

JOB_TOOL_NAME = 'check_export_job'

_OPENING = (
    'Hi! Our nightly billing export has failed three nights in a row. '
    f'It writes to {DETAIL} under the service account svc-billing-export. Can you take a look?'
)
_MIDDLE: tuple[tuple[str, str], ...] = (
    (
        'Could the credential rotation we did on Monday explain it?',
        'It could: a rotated key that the job still caches would fail signing, but that shows up as '
        'SignatureDoesNotMatch. An AccessDenied points at permissions rather than the key itself.',
    ),
    (
        'The role still has s3:PutObject in its policy. What else could block the upload?',
        'Two usual suspects: a bucket policy with an explicit Deny (for example one requiring encryption '
        'headers), or a KMS key policy that does not list the role. An explicit Deny always wins.',
    ),
    (
        'We also moved the job into a new VPC last week. Does that matter?',
        'Yes, if the bucket policy only allows requests from the old VPC endpoint (aws:SourceVpce). '
        'Uploads from the new VPC would then be denied exactly like this.',
    ),
    (
        "How can we test the upload without waiting for tonight's run?",
        'Run the job once by hand with a one-row input, or copy a small file with the same role and '
        'encryption settings. Either reproduces the failure in a minute.',
    ),
    (
        'The manual copy fails with the same AccessDenied. What should we send to the platform team?',
        'Send the failing request id, the role ARN, the VPC endpoint id and the exact time of the '
        'attempt. With those they can find the denying statement in CloudTrail.',
    ),
    (
        'Is there anything we should monitor once it is fixed?',
        'Alert on the job status and on the object count written per night: a silent partial export '
        'is worse than a loud failure.',
    ),
    (
        'Can we backfill the three missing nights afterwards?',
        'Yes: the export is idempotent per night, so rerun it for each missing date, oldest first, '
        'and check the row counts against the billing database.',
    ),
    (
        'Should we add a retry to the job?',
        'A retry with backoff helps for throttling, not for AccessDenied; keep it, but alert on the '
        'first permission error instead of retrying it.',
    ),
)
_CLOSING = 'Before I file the change request: what was the exact export path I gave you at the start?'
_CANNED: dict[str, str] = dict(_MIDDLE)

_S3_PATH = re.compile(r's3://[^\s\'"`<>)\]]+')
_SEARCH_QUERY = 'billing export s3'


def prompts(turns: int) -> list[str]:
    """The user's side of a `turns`-turn conversation: the detail, small talk, the question about it."""
    if not MIN_TURNS <= turns <= MAX_TURNS:
        raise ValueError(f'turns must be between {MIN_TURNS} and {MAX_TURNS}, got {turns}')
    return [_OPENING, *(prompt for prompt, _ in _MIDDLE[: turns - 2]), _CLOSING]


def check_export_job(job: str) -> str:
    """Look up the last runs of an export job.

    Args:
        job: The job's name, such as `nightly-billing-export`.
    """
    return (
        f'{job}: last 3 runs FAILED with AccessDenied on PutObject (2026-11-27, -28, -29 at 02:00 UTC); '
        'last success 2026-11-26 02:00 UTC; 0 objects written since.'
    )


def scripted_model() -> FunctionModel:
    """A fresh scripted support model."""
    return FunctionModel(_reply, model_name='scripted-support')


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The support agent's next move, from the messages alone (deterministic, so replay-safe)."""
    last = messages[-1]
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                return _after_tool(part)
    prompt = _last_prompt(messages)
    tools = {tool.name for tool in info.function_tools}
    if DETAIL in prompt and JOB_TOOL_NAME in tools:
        return ModelResponse(parts=[ToolCallPart(JOB_TOOL_NAME, {'job': 'nightly-billing-export'})])
    if prompt == _CLOSING:
        known = _S3_PATH.search(_context_text(messages[:-1]))
        if known is not None:
            return _text(f'You gave me {known.group(0)} at the start.')
        if SEARCH_TOOL_NAME in tools:
            return ModelResponse(parts=[ToolCallPart(SEARCH_TOOL_NAME, {'query': _SEARCH_QUERY})])
        return _text('That part of our conversation is no longer in my context, so I cannot quote it exactly.')
    return _text(_CANNED.get(prompt, 'Understood. Tell me what you see next and we will narrow it down.'))


def _after_tool(part: ToolReturnPart) -> ModelResponse:
    content = str(part.content)
    if part.tool_name == JOB_TOOL_NAME:
        return _text(
            'The last three runs failed with AccessDenied on PutObject and nothing was written since the 26th, '
            'so the job reaches the bucket but is not allowed to write. What changed around the 26th?'
        )
    found = _S3_PATH.search(content)
    if found is None:
        return _text('I searched our earlier messages but could not find the path; could you paste it again?')
    return _text(
        f'You gave me {found.group(0)} at the start. That message had been dropped from my context, '
        'so I recalled it from the persisted history.'
    )


def _last_prompt(messages: Sequence[ModelMessage]) -> str:
    """The newest user prompt: core may merge the compaction marker into the request that carries it."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ''


def _context_text(messages: Sequence[ModelMessage]) -> str:
    """Every prompt, answer and tool result the model can still see, as one text."""
    texts: list[str] = []
    for message in messages:
        for part in message.parts:
            content: object = getattr(part, 'content', None)
            if isinstance(content, str):
                texts.append(content)
    return '\n'.join(texts)


def _text(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])
