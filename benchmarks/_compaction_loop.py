"""One agent run that is a long tool loop, and what its model saw at every request, as plain figures.

Shared by both sides of `benchmarks.compaction`: this library (pydantic-ai 2.68, this venv) and the
reference (pydantic-ai-harness 0.62 on pydantic-ai 2.62, its own venv) import it, so it needs only
the standard library, `pydantic_ai` and `benchmarks._script` (whose `Writer` gives the tool output
the same realistic text as the search benchmarks). Both sides run the very same model and tool, and
every figure is computed here, by the same code, from the messages the model was handed.

The model asks for one `run_command` call per request for `steps` requests (step 1's output holds
`DETAIL`, a path with a hex id nothing else holds), then one `search_conversation_history` call,
then ends the run quoting the search's answer. The query is `DETAIL_QUERY`, or, when the model's
view holds step 1's result cleared to a placeholder, the query the placeholder names: what a model
reading its context would do.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic_ai import RunContext, Tool
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

from benchmarks._script import Writer

__all__ = (
    'DETAIL',
    'DETAIL_QUERY',
    'SEARCH_TOOL',
    'TASK',
    'Figures',
    'LoopModel',
    'ViewMeter',
    'command_tool',
    'message_chars',
)

TASK = (
    'Reconcile the March ledger export with the warehouse: inspect each batch directory in turn with '
    '`run_command`, note every mismatch, and report the file the reconciliation must be re-run from.'
)
DETAIL = '/srv/ledger/exports/2026-03/part-00017-c0ffee42d9e1.snappy.parquet'
"""What step 1 returns and nothing else holds: the file the task's report needs at the end."""
DETAIL_QUERY = 'part-00017 c0ffee42d9e1 snappy parquet export'
SEARCH_TOOL = 'search_conversation_history'
TOOL = 'run_command'
_PLACEHOLDER_QUERY = re.compile(r'with query "([^"]*)"')


def message_chars(message: ModelMessage) -> int:
    """Characters of what a provider is sent for `message`: texts, tool names, arguments, results.

    Instructions are left out (each side's search adds its own, constant across requests). Tokens
    are this over four, the same estimate on both sides.
    """
    total = 0
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            total += len(part.tool_name) + len(part.args_as_json_str())
        elif isinstance(part, ToolReturnPart):
            total += len(part.tool_name) + len(part.model_response_str())
        else:
            content: object = getattr(part, 'content', None)
            if isinstance(content, str):
                total += len(content)
            elif content is not None:
                total += len(json.dumps(content, default=str))
    return total


def _content_key(message: ModelMessage) -> str:
    """A digest of the message's content as a provider's prompt cache sees it (no timestamps)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(message.kind.encode())
    for part in message.parts:
        digest.update(b'\0' + part.part_kind.encode())
        if isinstance(part, ToolCallPart):
            digest.update(f'{part.tool_name}\0{part.tool_call_id}\0{part.args_as_json_str()}'.encode())
        elif isinstance(part, ToolReturnPart):
            digest.update(f'{part.tool_name}\0{part.tool_call_id}\0{part.model_response_str()}'.encode())
        else:
            content: object = getattr(part, 'content', None)
            digest.update(json.dumps(content, default=str, sort_keys=True).encode())
    return digest.hexdigest()


def _holds_task(view: Sequence[ModelMessage]) -> bool:
    return any(
        isinstance(part, UserPromptPart) and part.content == TASK
        for message in view
        if isinstance(message, ModelRequest)
        for part in message.parts
    )


def _orphans(view: Sequence[ModelMessage]) -> int:
    """Tool returns in the view whose call the view does not hold (a provider rejects them)."""
    calls = {
        part.tool_call_id
        for message in view
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    return sum(
        1
        for message in view
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_call_id not in calls
    )


@dataclass
class Figures:
    """What the model saw over one run, request by request, reduced to the benchmark's figures.

    Attributes:
        requests: Model requests in the run (the steps, the search, the final answer).
        peak_messages: The most messages one request held.
        peak_tokens: The most tokens (characters / 4) one request's messages held.
        peak_loop_tokens: As `peak_tokens`, over the tool loop's requests only: the last request,
            which carries the search's answer, left out (answers differ in size between sides).
        total_tokens: Tokens summed over every request: what the run sent in all.
        cache_misses: Requests whose history does not extend the previous request's: their first
            k messages differ in content from the previous request's k (a provider's prompt cache
            misses from the first difference on).
        requests_without_task: Requests whose messages do not hold the task's prompt.
        orphan_returns: Tool returns sent without their call, over all requests.
        recall_query: What the model searched for at the end.
        recall_verbatim: Whether the search's answer holds `DETAIL` verbatim.
        recall_ms: From the model's search call to the model holding the answer (the tool call,
            persistence of the step before it, the framework's overhead).
        step1_cleared: Whether the last view held step 1's result cleared to a placeholder.
        answer_chars: Length of the search's answer.
        wall_s: The whole run, from `agent.run` to its result.
        cpu_s: The process's CPU time over the same span (all its threads): steadier than `wall_s`
            on a machine that is busy with something else.
    """

    requests: int = 0
    peak_messages: int = 0
    peak_tokens: int = 0
    peak_loop_tokens: int = 0
    total_tokens: int = 0
    cache_misses: int = 0
    requests_without_task: int = 0
    orphan_returns: int = 0
    recall_query: str = ''
    recall_verbatim: bool = False
    recall_ms: float = 0.0
    step1_cleared: bool = False
    answer_chars: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ViewMeter:
    """Measures each view as the model receives it, keeping only digests (a view may be 400 messages)."""

    figures: Figures = field(default_factory=Figures)
    _previous: list[str] = field(default_factory=list[str])

    def observe(self, view: Sequence[ModelMessage]) -> int:
        """Count one request's view in; its tokens."""
        figures = self.figures
        keys = [_content_key(message) for message in view]
        tokens = (sum(message_chars(message) for message in view) + 3) // 4
        figures.requests += 1
        figures.peak_messages = max(figures.peak_messages, len(view))
        figures.peak_tokens = max(figures.peak_tokens, tokens)
        figures.total_tokens += tokens
        if self._previous and keys[: len(self._previous)] != self._previous:
            figures.cache_misses += 1
        figures.requests_without_task += not _holds_task(view)
        figures.orphan_returns += _orphans(view)
        self._previous = keys
        return tokens


def _outputs(steps: int, seed: int) -> dict[str, tuple[str, str]]:
    """Each step's command and its output, by tool call id; deterministic in `seed`."""
    rng = random.Random(seed)
    writer = Writer(rng, 'ledger')
    out: dict[str, tuple[str, str]] = {}
    for n in range(1, steps + 1):
        batch = f'/srv/ledger/batches/{n:04d}'
        if n == 1:
            others = '\n'.join(
                f'/srv/ledger/staging/2026-03/part-{k:05d}-{writer.hex_id()}.snappy.parquet' for k in (3, 9, 12)
            )
            command = f"find /srv/ledger -name '*.parquet' -newer {batch}/manifest.json"
            output = f'{others}\n{DETAIL}\n' + writer.logs(4)
        else:
            roll = rng.random()
            if roll < 0.4:
                command = f'tail -n 12 {batch}/reconcile.log'
                output = writer.logs(rng.randint(8, 14))
            elif roll < 0.7:
                path = rng.choice(writer.files)
                command = f'sed -n 1,40p {path}'
                output = writer.code(rng.randint(18, 36))
            else:
                function = rng.choice(writer.functions)
                command = f'grep -rn {function} {batch}'
                output = '\n'.join(
                    f'{batch}/{rng.choice(writer.files)}:{rng.randint(1, 900)}:{writer.code(1)}'
                    for _ in range(rng.randint(8, 16))
                )
        out[f'call-{n}'] = (command, output)
    return out


def command_tool(steps: int, seed: int = 12) -> Tool[Any]:
    """The `run_command` tool: each call returns its step's output, by the call's id."""
    outputs = _outputs(steps, seed)

    async def run_command(ctx: RunContext[Any], command: str) -> str:
        """Run a shell command in the workspace and return its output."""
        assert ctx.tool_call_id is not None
        expected, output = outputs[ctx.tool_call_id]
        assert command == expected, (command, expected)
        return output

    return Tool[Any](run_command, name=TOOL, takes_ctx=True)


@dataclass
class LoopModel:
    """The scripted model: `steps` tool calls, one search, then the answer quoting the search's result."""

    steps: int
    seed: int = 12
    meter: ViewMeter = field(default_factory=ViewMeter)
    _commands: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])
    _searched_at: float = 0.0

    def __post_init__(self) -> None:
        self._commands = _outputs(self.steps, self.seed)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        now = time.perf_counter()
        tokens = self.meter.observe(messages)
        figures = self.meter.figures
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if not any(isinstance(part, ToolReturnPart) and part.tool_name == SEARCH_TOOL for part in last.parts):
            figures.peak_loop_tokens = max(figures.peak_loop_tokens, tokens)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == SEARCH_TOOL:
                answer = part.model_response_str()
                figures.recall_ms = (now - self._searched_at) * 1000
                figures.recall_verbatim = DETAIL in answer
                figures.answer_chars = len(answer)
                return ModelResponse(parts=[TextPart(f'Re-run from the file the search found:\n{answer}')])
        n = figures.requests
        if n <= self.steps:
            call_id = f'call-{n}'
            command = self._commands[call_id][0]
            return ModelResponse(parts=[ToolCallPart(TOOL, {'command': command}, tool_call_id=call_id)])
        figures.recall_query = self._query(messages)
        self._searched_at = time.perf_counter()
        return ModelResponse(
            parts=[ToolCallPart(SEARCH_TOOL, {'query': figures.recall_query}, tool_call_id='call-search')]
        )

    def _query(self, view: Sequence[ModelMessage]) -> str:
        """The placeholder's query when step 1's result was cleared in the view, else `DETAIL_QUERY`."""
        for message in view:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_call_id == 'call-1':
                    match = _PLACEHOLDER_QUERY.search(part.model_response_str())
                    if match is not None and DETAIL not in part.model_response_str():
                        self.meter.figures.step1_cleared = True
                        return match.group(1)
        return DETAIL_QUERY

    def model(self) -> FunctionModel:
        return FunctionModel(self, model_name='compaction-loop')
