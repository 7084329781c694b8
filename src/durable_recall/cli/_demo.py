"""`durable-recall demo`: a support conversation where compaction drops a detail and search recovers it.

The demo drives a real pydantic-ai `Agent` with `StepPersistence`, `ConversationSearch` and
`SlidingWindowCompaction` on a SQLite store, on the chosen engine, and prints each turn: the
prompt, the answer, the tool calls and results, what was persisted, when compaction dropped
messages, and finally the search call, its result, and the detail recovered verbatim.
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from pydantic_ai.messages import ModelMessage, ModelRequest, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import Model, infer_model

from ..compaction import compaction_marker_count, is_marker_part
from ..stores import SqliteStepStore, StepStore
from ..text import SEARCH_TOOL_NAME
from ._agent import build_agent
from ._demo_json import turn_json
from ._engines import Conversation, start_engine
from ._errors import CliError, one_line
from ._output import count, field_lines, terminal_width, write_json
from ._parser import DEFAULT_STORE, MAX_TURNS, MIN_TURNS, EngineName
from ._reading import read_run
from ._script import DETAIL, WINDOW, prompts, scripted_model
from ._store import check_writable_store
from ._turn import TurnResult

__all__ = ('model_failure', 'run_demo')

_RESULT_LINES = 22
_TOOL_CLIP = 220


@dataclass
class _Context:
    """What the demo tracks from turn to turn."""

    dropped: int = 0
    detail_in_context: bool = False
    dropped_in_turn: int | None = None
    recovered: bool = False


async def run_demo(args: argparse.Namespace, out: TextIO) -> int:
    """Run the demo; 0 when the detail came back verbatim.

    With `--json` the story is not printed; one JSON document at the end holds each turn (its
    run, prompt, answer and search calls) and the outcome.
    """
    engine = cast(EngineName, args.engine)
    turns = _prompts(args.turns)
    model = _model(args.model)
    store_path = _store_path(args.store)
    store = SqliteStepStore(store_path)
    conversation_id = f'demo-{uuid.uuid4().hex[:12]}'
    width = terminal_width()
    text = None if args.json else out
    records: list[dict[str, Any]] = []
    context = _Context()
    # DBOS's system database is the engine's bookkeeping, not the demo's output: it lives in a
    # temporary directory, so the working directory keeps only the store.
    with tempfile.TemporaryDirectory(prefix='durable-recall-demo-') as scratch:
        try:
            async with start_engine(
                engine,
                lambda durability: build_agent(model, store, durability),
                conversation_id,
                Path(scratch) / 'dbos-system.sqlite',
            ) as conversation:
                _write(text, _header(args, store_path, conversation_id, conversation.description, len(turns), width))
                for number, prompt in enumerate(turns, start=1):
                    result = await _ask(conversation, prompt, number, args.model)
                    story: dict[str, Any] = {}
                    lines = await _turn_lines(number, len(turns), result, store, context, width, story)
                    _write(text, lines)
                    records.append({**turn_json(number, prompt, result), **story})
                description = conversation.description
        finally:
            await store.aclose()
    _write(text, _footer(context, args.store, conversation_id, width))
    if args.json:
        outcome = {
            'engine': engine,
            'engine_description': description,
            'store': str(store_path),
            'conversation_id': conversation_id,
            'model': args.model,
            'detail': DETAIL,
            'recovered': context.recovered,
            'dropped_in_turn': context.dropped_in_turn,
            'turns': records,
            'result': _verdict(context),
        }
        write_json(outcome, out)
    return 0 if context.recovered else 1


def _prompts(turns: int) -> list[str]:
    try:
        return prompts(turns)
    except ValueError:
        raise CliError(f'--turns must be between {MIN_TURNS} and {MAX_TURNS}, got {turns}', status=2) from None


async def _ask(conversation: Conversation, prompt: str, number: int, model: str | None) -> TurnResult:
    """One turn; a real model's failure (no connection, a refused key, ...) becomes one line naming it."""
    if model is None:
        return await conversation.ask(prompt)
    try:
        return await conversation.ask(prompt)
    except CliError:
        raise
    except Exception as error:
        raise CliError(model_failure(model, number, error)) from error


def model_failure(model: str, number: int, error: BaseException) -> str:
    """The line for a real model that failed in turn `number`: a connection problem said as one.

    Under an engine the provider's error arrives wrapped (an activity's or step's failure), so the
    whole chain of causes is looked at, by the names of the error types (and Temporal's recorded type).
    """
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__ or getattr(seen, 'cause', None)
    names = [type(item).__name__ for item in chain] + [str(getattr(item, 'type', '')) for item in chain]
    deepest = chain[-1]
    said = f'{type(deepest).__name__}: {one_line(str(deepest))}'
    if any(isinstance(item, ConnectionError | TimeoutError) for item in chain) or any(
        'Connect' in name or 'Timeout' in name for name in names
    ):
        return (
            f'cannot reach the provider of model {model!r} in turn {number} ({said}): check the network, '
            "the provider's base URL and its API key"
        )
    return f'model {model!r} failed in turn {number}: {said}'


def _model(name: str | None) -> Model | str:
    if name is None:
        return scripted_model()
    try:
        return infer_model(name)
    except ImportError as error:
        provider = name.partition(':')[0]
        raise CliError(
            f'model {name!r} needs the {error.name or provider} package, which is not installed: '
            f"pip install 'pydantic-ai-slim[{provider}]' ({one_line(str(error))})"
        ) from error
    except Exception as error:  # pydantic-ai's own errors for unknown providers and missing keys
        raise CliError(f'cannot use model {name!r}: {one_line(str(error))}') from error


def _store_path(text: str) -> Path:
    if '://' in text or text.strip() in ('', 'memory:'):
        raise CliError(f'the demo keeps its store in a SQLite file: pass --store PATH (such as {DEFAULT_STORE})')
    path = Path(text).expanduser().resolve()
    check_writable_store(path)
    return path


def _header(
    args: argparse.Namespace, store: Path, conversation_id: str, engine: str, turns: int, width: int
) -> list[str]:
    model = args.model or 'scripted support agent (a pydantic-ai FunctionModel: offline, no API key)'
    lines = [
        'durable-recall demo: exact recall after compaction, on a real pydantic-ai Agent',
        '',
        *field_lines('engine', engine, width),
        *field_lines('store', f'{store} (SQLite)', width),
        *field_lines('conversation', conversation_id, width),
        *field_lines('model', model, width),
        *field_lines(
            'agent',
            "StepPersistence + ConversationSearch(scope='conversation') + "
            f'SlidingWindowCompaction(max_messages={WINDOW}, preserve_first_user_message=False)',
            width,
        ),
        *field_lines(
            'story',
            f'turn 1 gives the export path; past {WINDOW} messages the window cuts back to {WINDOW // 2}, so '
            'compaction drops it; '
            f'turn {turns} asks for it back.',
            width,
        ),
    ]
    return lines


async def _turn_lines(
    number: int, total: int, result: TurnResult, store: StepStore, context: _Context, width: int, story: dict[str, Any]
) -> list[str]:
    """The turn as the demo prints it; `story` gets the same facts as data, for `--json`."""
    title = f'── turn {number}/{total} · run {result.run_id} '
    lines = ['', title + '─' * max(width - len(title), 3)]
    rendered = [_message_lines(message, width) for message in result.new_messages]
    # Compaction runs before the run's first model request, so it is shown right after the prompt.
    lines.extend(rendered[0] if rendered else [])
    story['detail'] = None
    if result.new_messages and DETAIL in _text(result.new_messages[0]) and not context.recovered:
        story['detail'] = f'{DETAIL} is what the last turn will ask for'
        lines.extend(field_lines('detail', story['detail'], width))
    compaction = _compaction_text(number, result, context)
    story['compaction'] = compaction
    if compaction is not None:
        lines.extend(field_lines('compaction', compaction, width))
    for message_lines in rendered[1:]:
        lines.extend(message_lines)
    summary = await read_run(store, result.run_id)
    sizes = ', '.join(str(size) for size in summary.snapshot_sizes)
    states = 'all complete' if summary.interrupted == 0 else f'{summary.interrupted} interrupted'
    new = len(result.new_messages)
    persisted = (
        f'{count(len(summary.snapshot_sizes), "snapshot")} ({sizes} {"message" if sizes == "1" else "messages"}, '
        f"{states}); the run's record: {count(summary.record_size, 'message')} "
        f'({max(summary.record_size - new, 0)} inherited, {new} new)'
    )
    story['persisted'] = {
        'text': persisted,
        'snapshot_sizes': summary.snapshot_sizes,
        'interrupted_snapshots': summary.interrupted,
        'record_messages': summary.record_size,
        'inherited_messages': max(summary.record_size - new, 0),
    }
    story['recovered'] = None
    lines.extend(field_lines('persisted', persisted, width))
    if number == total and DETAIL in result.output:
        context.recovered = True
        where = f', although compaction dropped it from the context in turn {context.dropped_in_turn}'
        recovered = f'{DETAIL} verbatim{where if context.dropped_in_turn else ""}'
        story['recovered'] = recovered
        lines.extend(field_lines('recovered', recovered, width))
    return lines


def _message_lines(message: ModelMessage, width: int) -> list[str]:
    lines: list[str] = []
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if is_marker_part(part):
                continue
            if isinstance(part, ToolReturnPart):
                lines.extend(_return_lines(cast('ToolReturnPart[Any]', part), width))
            elif part.part_kind == 'user-prompt' and isinstance(part.content, str):
                lines.extend(field_lines('user', part.content, width))
    else:
        for part in message.parts:
            if isinstance(part, TextPart):
                lines.extend(field_lines('agent', part.content, width))
            elif isinstance(part, ToolCallPart):
                arguments = ', '.join(f'{key}={value!r}' for key, value in part.args_as_dict().items())
                label = 'search' if part.tool_name == SEARCH_TOOL_NAME else 'tool call'
                lines.extend(field_lines(label, f'{part.tool_name}({arguments})', width))
    return lines


def _return_lines(part: ToolReturnPart[Any], width: int) -> list[str]:
    content = str(part.content)
    if part.tool_name != SEARCH_TOOL_NAME:
        clipped = content if len(content) <= _TOOL_CLIP else content[:_TOOL_CLIP] + '...'
        return field_lines('tool result', clipped, width)
    head = field_lines('search result', '', width)[0]
    rule = ' ' * len(head) + '│ '
    shown: list[str] = []
    for line in content.splitlines():
        shown.extend(textwrap.wrap(line, width=max(width - len(rule), 30), subsequent_indent='     ') or [''])
    if len(shown) > _RESULT_LINES:
        shown = [*shown[:_RESULT_LINES], f'... ({count(len(shown) - _RESULT_LINES, "more line")})']
    return [(head + '│ ' if index == 0 else rule) + line for index, line in enumerate(shown)]


def _compaction_text(number: int, result: TurnResult, context: _Context) -> str | None:
    """What compaction did in this turn, or `None` when it dropped nothing more."""
    dropped = compaction_marker_count(result.history[0]) if result.history else 0
    # What the run kept of the history it was given: a later answer may quote the detail again.
    kept = result.history[: len(result.history) - len(result.new_messages)]
    in_context = any(DETAIL in _text(message) for message in kept)
    text: str | None = None
    if dropped > context.dropped:
        more = dropped - context.dropped
        text = (
            f'the window dropped {more} more {"message" if more == 1 else "messages"} from the context '
            f'({dropped} so far); the context now holds {len(result.history)}. The store still has every one of them.'
        )
        if context.detail_in_context and not in_context:
            context.dropped_in_turn = number
            text += ' The export path left the context with them.'
    context.dropped = dropped
    context.detail_in_context = any(DETAIL in _text(message) for message in result.history)
    return text


def _text(message: ModelMessage) -> str:
    return ' '.join(str(getattr(part, 'content', '')) for part in message.parts)


def _verdict(context: _Context) -> str:
    if context.recovered:
        return f'Recovered {DETAIL} verbatim from the persisted history after compaction dropped it.'
    return f'The agent did not quote {DETAIL}: see its last answer above.'


def _footer(context: _Context, store: str, conversation_id: str, width: int) -> list[str]:
    verdict = _verdict(context)
    quoted = shlex.quote(store)
    return [
        '',
        *field_lines('result', verdict, width, indent=''),
        '',
        'Look at what was persisted:',
        f'  durable-recall runs --store {quoted} --conversation {conversation_id}',
        f"  durable-recall search --store {quoted} --conversation {conversation_id} 'billing export s3'",
    ]


def _write(out: TextIO | None, lines: list[str]) -> None:
    if out is None:
        return
    out.write('\n'.join(lines) + '\n')
    out.flush()
