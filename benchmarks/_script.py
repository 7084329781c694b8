"""Deterministic agent conversations as plain data: what was said, step by step.

A script holds no pydantic-ai objects, only strings, numbers and JSON values, so the reference
(pydantic-ai 2.62, in its own venv) and this library (the newest pydantic-ai) replay the very same conversation,
each building messages with its own pydantic-ai. This module needs only the standard library and
`pydantic_ai`, and runs under both.

What a script looks like (see `generate_conversation`):

* a conversation is a sequence of runs, each started by a user prompt and threaded through
  `message_history` (each run inherits the previous run's final history);
* a run is a sequence of model steps: tool-call steps (one to four calls, sometimes with a line of
  text before them) and a final text answer;
* tool calls carry JSON arguments; their results are source code, command logs with timestamps,
  tracebacks and hex request ids, grep hits, JSON API responses and search results; about one
  result in a hundred is long (tens of KB);
* prose is drawn from a Zipf-distributed vocabulary (common English and software words at the
  head, 40,000 pseudo-words in the tail), and each conversation has its own project: file paths,
  function and class names that recur within it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from benchmarks._writer import COMMON, Writer, new_writer, shared_vocabulary

__all__ = (
    'MODEL_NAME',
    'SCRIPT_VERSION',
    'TOOL_NAMES',
    'Call',
    'Conversation',
    'Run',
    'Step',
    'Writer',
    'conversation_from_json',
    'conversation_to_json',
    'generate_conversation',
    'make_queries',
    'new_writer',
    'response_for',
    'scripted_agent_parts',
    'token_estimate',
)

SCRIPT_VERSION = 1
"""Bumped whenever generation changes, so cached stores built from older scripts are not reused."""

MODEL_NAME = 'bench-model'
"""The `FunctionModel` name; the direct writer stamps the same name on its responses."""


TOOL_NAMES = ('read_file', 'run_command', 'grep', 'write_file', 'http_request', 'search_docs')


@dataclass(frozen=True)
class Call:
    """One tool call and the result its tool returns."""

    tool: str
    args: dict[str, Any]
    call_id: str
    result: Any


@dataclass(frozen=True)
class Step:
    """One model response: optional text, then tool calls (none for the run's final answer)."""

    text: str
    calls: tuple[Call, ...]
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Run:
    """One `Agent.run`: a prompt and the model's steps; the last step has no calls."""

    run_id: str
    prompt: str
    steps: tuple[Step, ...]

    @property
    def message_count(self) -> int:
        """Messages the run adds: its prompt, each response, and a tool-return request per call step."""
        return 2 * len(self.steps)


@dataclass(frozen=True)
class Conversation:
    """Runs threaded through `message_history`, under one conversation id."""

    conversation_id: str
    runs: tuple[Run, ...]

    @property
    def message_count(self) -> int:
        """Distinct messages the conversation holds."""
        return sum(run.message_count for run in self.runs)


# --- tools -----------------------------------------------------------------------------------


def _tool_call(writer: Writer, call_id: str) -> Call:
    rng = writer.rng
    tool = rng.choices(TOOL_NAMES, weights=(30, 25, 15, 8, 12, 10))[0]
    args: dict[str, Any]
    result: Any
    if tool == 'read_file':
        path = rng.choice(writer.files)
        args = {'path': path}
        if rng.random() < 0.3:
            start = rng.randint(1, 400)
            args.update(start_line=start, end_line=start + rng.randint(10, 80))
        result = writer.code(rng.randint(300, 900) if writer.long() else rng.randint(6, 50))
    elif tool == 'run_command':
        function, path = rng.choice(writer.functions), rng.choice(writer.files)
        command = rng.choice(
            (
                f'pytest {path} -k {function} -x',
                f'python -m {path[:-3].replace("/", ".")}',
                f'git log --oneline -n {rng.randint(5, 50)} -- {path}',
                f'grep -rn {function} src',
                f'make {rng.choice(writer.words(3))}',
            )
        )
        args = {'command': command, 'cwd': f'/workspace/{writer.project}', 'timeout': rng.choice((30, 60, 120, 600))}
        result = writer.logs(rng.randint(200, 700) if writer.long() else rng.randint(2, 22))
    elif tool == 'grep':
        pattern = rng.choice(writer.functions)
        args = {'pattern': pattern, 'path': rng.choice(writer.dirs), 'max_results': 50}
        result = '\n'.join(
            f'{rng.choice(writer.files)}:{rng.randint(1, 900)}:{writer.code(1)}' for _ in range(rng.randint(1, 18))
        )
    elif tool == 'write_file':
        path = rng.choice(writer.files)
        content = writer.code(rng.randint(8, 40))
        args = {'path': path, 'content': content}
        result = f'Wrote {len(content.encode())} bytes to {path}'
    elif tool == 'http_request':
        resource = rng.choice(writer.words(4))
        args = {
            'method': rng.choice(('GET', 'GET', 'POST')),
            'url': f'https://api.{writer.project}.internal/v1/{resource}/{writer.hex_id()}',
        }
        result = {
            'status': rng.choice((200, 200, 200, 201, 404, 409, 500)),
            'headers': {'content-type': 'application/json', 'x-request-id': writer.hex_id()},
            'body': {
                'id': writer.hex_id(),
                'name': ' '.join(writer.words(3)),
                'updated_at': writer.timestamp(),
                'items': [
                    {'id': writer.hex_id(), 'label': ' '.join(writer.words(2)), 'value': rng.randint(0, 10_000)}
                    for _ in range(rng.randint(1, 10))
                ],
            },
        }
    else:
        args = {'query': ' '.join(writer.words(rng.randint(2, 6))), 'limit': 5}
        result = [
            {
                'title': writer.sentence(3, 8),
                'url': f'https://docs.{writer.project}.dev/{"/".join(writer.words(2))}',
                'snippet': writer.sentence(10, 30),
            }
            for _ in range(rng.randint(2, 5))
        ]
    return Call(tool=tool, args=args, call_id=call_id, result=result)


def _step_count(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.7:
        return rng.randint(1, 8)
    if roll < 0.95:
        return rng.randint(8, 40)
    return rng.randint(40, 120)


def _prompt(writer: Writer) -> str:
    text = writer.paragraph(1, 3)
    if writer.rng.random() < 0.08:
        text += '\n\n' + writer.logs(writer.rng.randint(4, 30))
    return text


def _answer(writer: Writer) -> str:
    if writer.rng.random() < 0.05:
        return writer.paragraph(15, 40) + '\n\n' + writer.code(writer.rng.randint(10, 40))
    return writer.paragraph(2, 7)


def token_estimate(text: str) -> int:
    """A model's token count for `text`, roughly (four characters a token), for the scripted usage."""
    return max(1, len(text) // 4)


def generate_conversation(
    seed: int, messages: int, *, conversation_id: str = 'bench-target', run_prefix: str | None = None
) -> Conversation:
    """A conversation of at least `messages` messages (whole runs, so up to one run more).

    Deterministic: the same arguments give the same conversation, in any process.
    """
    rng = random.Random(f'{SCRIPT_VERSION}:{seed}:{conversation_id}')
    writer = new_writer(rng)
    prefix = run_prefix or conversation_id
    runs: list[Run] = []
    total = 0
    context = 0
    while total < messages:
        run_id = f'{prefix}-r{len(runs):05d}'
        prompt = _prompt(writer)
        context += token_estimate(prompt)
        steps: list[Step] = []
        for step_index in range(_step_count(rng) - 1):
            text = writer.sentence() if rng.random() < 0.3 else ''
            count = rng.choices((1, 2, 3, 4), weights=(75, 18, 5, 2))[0]
            calls = tuple(_tool_call(writer, f'call_{run_id}_{step_index}_{k}') for k in range(count))
            output = token_estimate(text) + sum(token_estimate(json.dumps(call.args)) for call in calls)
            steps.append(Step(text=text, calls=calls, input_tokens=context, output_tokens=output))
            context = min(context + output + sum(token_estimate(str(call.result)) for call in calls), 200_000)
        answer = _answer(writer)
        steps.append(Step(text=answer, calls=(), input_tokens=context, output_tokens=token_estimate(answer)))
        runs.append(Run(run_id=run_id, prompt=prompt, steps=tuple(steps)))
        total += runs[-1].message_count
    return Conversation(conversation_id=conversation_id, runs=tuple(runs))


def make_queries(conversation: Conversation, count: int, seed: int = 0) -> list[str]:
    """Queries a model would send about this conversation, mixed by kind.

    Needles (a hex id or a function name said once or twice), paths, error lines, and plain
    prose of two or three mid-frequency words with a common one.
    """
    rng = random.Random(f'queries:{seed}:{conversation.conversation_id}')
    texts: list[str] = []
    for run in conversation.runs:
        texts.append(run.prompt)
        for step in run.steps:
            if step.text:
                texts.append(step.text)
            for call in step.calls:
                texts.append(json.dumps(call.args))
                texts.append(call.result if isinstance(call.result, str) else json.dumps(call.result))
    vocabulary = shared_vocabulary()
    queries: list[str] = []
    while len(queries) < count:
        kind = len(queries) % 4
        text = rng.choice(texts)
        pieces = text.replace('"', ' ').replace(',', ' ').split()
        if not pieces:
            continue
        if kind == 0:
            ids = [piece.split('=')[-1] for piece in pieces if 'id=' in piece or _is_hex(piece)]
            if not ids:
                continue
            queries.append(rng.choice(ids))
        elif kind == 1:
            paths = [piece.strip('`().:') for piece in pieces if '/' in piece and piece.endswith('.py')]
            if not paths:
                continue
            queries.append(f'{rng.choice(paths)} {rng.choice(vocabulary.ranked[150:3_000])}')
        elif kind == 2:
            words = [piece.rstrip(':.') for piece in pieces if piece.rstrip(':.').isalpha()]
            if not words:
                continue
            errors = [word for word in words if word.endswith('Error')]
            queries.append(' '.join([*(errors[:1] or [rng.choice(words)]), 'timeout', rng.choice(words)]))
        else:
            mid = vocabulary.ranked[300:8_000]
            queries.append(' '.join([rng.choice(COMMON), rng.choice(mid), rng.choice(mid)]))
    return queries


def _is_hex(piece: str) -> bool:
    return len(piece) == 12 and all(char in '0123456789abcdef' for char in piece)


# --- replay ----------------------------------------------------------------------------------


def response_for(step: Step) -> ModelResponse:
    """The model response a step scripts (before the model stamps its name on it)."""
    parts: list[TextPart | ToolCallPart] = []
    if step.text:
        parts.append(TextPart(step.text))
    parts.extend(ToolCallPart(call.tool, call.args, call.call_id) for call in step.calls)
    return ModelResponse(
        parts=parts, usage=RequestUsage(input_tokens=step.input_tokens, output_tokens=step.output_tokens)
    )


def scripted_agent_parts(
    conversation: Conversation,
) -> tuple[FunctionModel, list[Tool[Any]], Callable[[Run], Iterator[Step]]]:
    """A model that replays the script, the tools that return the scripted results, and a run cursor.

    Call the cursor with a run before `Agent.run`: the model then answers that run's steps in order.
    """
    results: dict[str, Any] = {}
    current: list[Iterator[Step]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = next(current[-1])
        for call in step.calls:
            results[call.call_id] = call.result
        return response_for(step)

    async def tool(ctx: RunContext[None], **_: Any) -> Any:
        assert ctx.tool_call_id is not None
        return results.pop(ctx.tool_call_id)

    schema: dict[str, Any] = {'type': 'object', 'additionalProperties': True}
    tools = [Tool[Any].from_schema(tool, name, f'The {name} tool.', schema, takes_ctx=True) for name in TOOL_NAMES]

    def start(run: Run) -> Iterator[Step]:
        steps = iter(run.steps)
        current[:] = [steps]
        return steps

    return FunctionModel(model, model_name=MODEL_NAME), tools, start


# --- serialization ---------------------------------------------------------------------------


def conversation_to_json(conversation: Conversation) -> dict[str, Any]:
    """Plain JSON for another process (and another pydantic-ai version)."""
    return {
        'conversation_id': conversation.conversation_id,
        'runs': [
            {
                'run_id': run.run_id,
                'prompt': run.prompt,
                'steps': [
                    {
                        'text': step.text,
                        'in': step.input_tokens,
                        'out': step.output_tokens,
                        'calls': [[call.tool, call.args, call.call_id, call.result] for call in step.calls],
                    }
                    for step in run.steps
                ],
            }
            for run in conversation.runs
        ],
    }


def conversation_from_json(data: dict[str, Any]) -> Conversation:
    """The inverse of `conversation_to_json`."""
    runs: list[Run] = []
    for run in data['runs']:
        steps: list[Step] = []
        for step in run['steps']:
            calls = tuple(Call(tool, args, call_id, result) for tool, args, call_id, result in step['calls'])
            steps.append(Step(text=step['text'], calls=calls, input_tokens=step['in'], output_tokens=step['out']))
        runs.append(Run(run_id=run['run_id'], prompt=run['prompt'], steps=tuple(steps)))
    return Conversation(conversation_id=data['conversation_id'], runs=tuple(runs))


def raw_text_bytes(conversation: Conversation) -> int:
    """UTF-8 bytes of what was said: prompts, texts, tool arguments (JSON) and results (text or JSON)."""
    total = 0
    for run in conversation.runs:
        total += len(run.prompt.encode())
        for step in run.steps:
            total += len(step.text.encode())
            for call in step.calls:
                total += len(call.tool) + len(json.dumps(call.args, ensure_ascii=False).encode())
                result = call.result if isinstance(call.result, str) else json.dumps(call.result, ensure_ascii=False)
                total += len(result.encode())
    return total
