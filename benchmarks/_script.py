"""Deterministic agent conversations as plain data: what was said, step by step.

A script holds no pydantic-ai objects, only strings, numbers and JSON values, so the reference
(pydantic-ai 2.62, in its own venv) and this library (2.68) replay the very same conversation,
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

import functools
import json
import random
import resource
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

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

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
"""When every generated conversation begins (message times advance from here)."""


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


# --- vocabulary -------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


_COMMON = _words(
    'the of and to a in is that for it on with as was be this are by at from or an not have but '
    'which they we you all can has were one will there their if more when been would what so no '
    'about out up into then them some could only other these also two like than first its any new '
    'after should how may over just where most such because each those here still very now same '
    'both between through under while again before without being need does did make use used see'
)

_DOMAIN = _words(
    'request response error cache token user config build test deploy worker queue timeout retry '
    'database index query schema migration service client server handler session payload message '
    'event stream batch commit branch release version module package function method class object '
    'value field record table column row key lock thread process memory disk file path directory '
    'endpoint route header status code log trace metric alert latency throughput backend frontend '
    'job task pipeline stage artifact image container cluster node pod replica shard partition '
    'offset cursor page limit filter sort order update insert delete select join transaction '
    'rollback snapshot checkpoint upload download parse render validate serialize encode decode '
    'hash signature certificate secret credential permission role account tenant customer invoice '
    'order payment refund price product catalog inventory warehouse shipment report dashboard chart'
)

_SYLLABLES = _words(
    'ka ve lo ri ta ne mo si du pa re zo fi na te lu ko sa mi be do ga he jo ku la me no pe ro su '
    'tu vi wa xe yo za bri cla dro fle gra kri pla sta tro vla zel mor tin ban dex lor vin quo'
)


def _pseudo_words(count: int) -> list[str]:
    rng = random.Random(20260105)
    seen: set[str] = set(_COMMON) | set(_DOMAIN)
    words: list[str] = []
    while len(words) < count:
        word = ''.join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class _Vocabulary:
    """Zipf-Mandelbrot ranks (`1 / (rank + 2.7) ** 1.05`) sampled through a lookup table."""

    SIZE = 40_000
    TABLE = 1 << 20

    def __init__(self) -> None:
        tail = _pseudo_words(self.SIZE - len(_COMMON) - len(_DOMAIN))
        ranked = list(_COMMON)
        # Software words sit among the first couple of thousand ranks, pseudo-words fill the rest.
        spread = random.Random(7)
        domain_ranks = sorted(spread.sample(range(len(_COMMON), 2_000), len(_DOMAIN)))
        domain = iter(_DOMAIN)
        rest = iter(tail)
        for rank in range(len(_COMMON), self.SIZE):
            ranked.append(next(domain) if domain_ranks and rank == domain_ranks[0] else next(rest))
            if domain_ranks and rank == domain_ranks[0]:
                domain_ranks.pop(0)
        weights = [1.0 / (rank + 2.7) ** 1.05 for rank in range(1, len(ranked) + 1)]
        total = sum(weights)
        table: list[str] = []
        for word, weight in zip(ranked, weights, strict=True):
            table.extend([word] * max(1, round(weight / total * self.TABLE)))
        self.ranked = ranked
        self.table = table


@functools.cache
def _vocabulary() -> _Vocabulary:
    return _Vocabulary()


# --- text ------------------------------------------------------------------------------------


def new_writer(rng: random.Random) -> Writer:
    """A conversation's writer, its project name drawn from `rng` (the first draw of a conversation)."""
    return Writer(rng, rng.choice(_vocabulary().ranked[500:5_000]))


class Writer:
    """Text of one conversation: Zipf prose and the identifiers of its own project.

    Public so that other workloads (`benchmarks._chat`) write the same kind of text.
    """

    def __init__(self, rng: random.Random, project: str) -> None:
        self.rng = rng
        vocabulary = _vocabulary()
        self._table = vocabulary.table
        self._mid = vocabulary.ranked[300:20_000]
        self.project = project
        packages = [rng.choice(self._mid) for _ in range(rng.randint(5, 10))]
        dirs = [f'src/{project}/{package}' for package in packages] + ['tests', 'scripts', 'docs']
        self.files = [
            f'{rng.choice(dirs)}/{rng.choice(self._mid)}_{rng.choice(self._mid)}.py'
            for _ in range(rng.randint(120, 300))
        ]
        self.dirs = dirs
        self.functions = [f'{rng.choice(self._mid)}_{rng.choice(self._mid)}' for _ in range(300)]
        self.classes = [rng.choice(self._mid).title() + rng.choice(self._mid).title() for _ in range(60)]
        self.clock = START

    def words(self, count: int) -> list[str]:
        table, random_ = self._table, self.rng.random
        size = len(table)
        return [table[int(random_() * size)] for _ in range(count)]

    def hex_id(self) -> str:
        return f'{self.rng.getrandbits(48):012x}'

    def identifier(self) -> str:
        roll = self.rng.random()
        if roll < 0.35:
            return self.rng.choice(self.files)
        if roll < 0.6:
            return f'`{self.rng.choice(self.functions)}()`'
        if roll < 0.75:
            return self.rng.choice(self.classes)
        if roll < 0.9:
            return self.hex_id()
        return str(self.rng.randint(2, 99_999))

    def sentence(self, low: int = 5, high: int = 18) -> str:
        words = self.words(self.rng.randint(low, high))
        if self.rng.random() < 0.3:
            words.insert(self.rng.randrange(len(words) + 1), self.identifier())
        return words[0].capitalize() + ' ' + ' '.join(words[1:]) + '.'

    def paragraph(self, low: int, high: int) -> str:
        return ' '.join(self.sentence() for _ in range(self.rng.randint(low, high)))

    def code(self, lines: int) -> str:
        rng = self.rng
        out: list[str] = []
        for _ in range(lines):
            roll = rng.random()
            function, other = rng.choice(self.functions), rng.choice(self.functions)
            var, arg = rng.choice(self._mid), rng.choice(self._mid)
            if roll < 0.12:
                out.append(f'def {function}({var}, {arg}=None):')
            elif roll < 0.2:
                out.append(f'class {rng.choice(self.classes)}:')
            elif roll < 0.35:
                out.append(f'    {var} = {other}({arg}, timeout={rng.randint(1, 600)})')
            elif roll < 0.45:
                out.append(f'    if {var} is None:')
            elif roll < 0.52:
                out.append(f'        raise {rng.choice(self.classes)}Error("{" ".join(self.words(5))}")')
            elif roll < 0.62:
                out.append(f'    return {var}.{function}({arg})')
            elif roll < 0.72:
                out.append(f'    # {" ".join(self.words(rng.randint(4, 12)))}')
            elif roll < 0.8:
                module = rng.choice(self.files)[:-3].replace('/', '.')
                out.append(f'from {module} import {function}')
            elif roll < 0.88:
                out.append(f'    for {var} in {arg}:')
            elif roll < 0.94:
                out.append(f'        {var}["{rng.choice(self._mid)}"] = "{self.hex_id()}"')
            else:
                out.append('')
        return '\n'.join(out)

    def timestamp(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randint(1, 5_000))
        return self.clock.strftime('%Y-%m-%dT%H:%M:%S.') + f'{self.clock.microsecond // 1000:03d}Z'

    def logs(self, lines: int) -> str:
        rng = self.rng
        out: list[str] = []
        for _ in range(lines):
            roll = rng.random()
            if roll < 0.05:
                path, function = rng.choice(self.files), rng.choice(self.functions)
                out.append('Traceback (most recent call last):')
                out.append(f'  File "/workspace/{self.project}/{path}", line {rng.randint(1, 900)}, in {function}')
                out.append(f'    {self.code(1).strip() or "pass"}')
                out.append(f'{rng.choice(self.classes)}Error: {" ".join(self.words(rng.randint(3, 9)))}')
                continue
            level = 'ERROR' if roll < 0.12 else 'WARNING' if roll < 0.25 else 'DEBUG' if roll < 0.4 else 'INFO'
            out.append(
                f'{self.timestamp()} {level} [{rng.choice(self.functions)}] {" ".join(self.words(rng.randint(3, 10)))}'
                f' request_id={self.hex_id()} took={rng.randint(1, 9_000)}ms'
            )
        return '\n'.join(out)

    def long(self) -> bool:
        return self.rng.random() < 0.01


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
    vocabulary = _vocabulary()
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
            queries.append(' '.join([rng.choice(_COMMON), rng.choice(mid), rng.choice(mid)]))
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


def split_sizes(total: int, parts: int) -> Sequence[int]:
    """`total` messages spread over `parts` conversations."""
    base, extra = divmod(total, parts)
    return [base + (1 if index < extra else 0) for index in range(parts)]


def peak_rss_kb() -> int:
    """This process's own peak RSS (VmHWM), in KiB.

    Not `ru_maxrss`: on Linux that keeps the parent's high-water mark across a vfork + exec, so a
    small child of a big parent would report the parent's figure.
    """
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
