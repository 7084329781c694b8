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
from ._engines import start_engine
from ._errors import CliError, one_line
from ._output import field_lines, terminal_width, write_json
from ._parser import DEFAULT_STORE, MAX_TURNS, MIN_TURNS, EngineName
from ._reading import read_run
from ._script import DETAIL, WINDOW, prompts, scripted_model
from ._store import check_writable_store
from ._turn import TurnResult

__all__ = ('run_demo',)

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
                    result = await conversation.ask(prompt)
                    lines = await _turn_lines(number, len(turns), result, store, context, width)
                    _write(text, lines)
                    records.append(turn_json(number, prompt, result))
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
        }
        write_json(outcome, out)
    return 0 if context.recovered else 1


def _prompts(turns: int) -> list[str]:
    try:
        return prompts(turns)
    except ValueError:
        raise CliError(f'--turns must be between {MIN_TURNS} and {MAX_TURNS}, got {turns}', status=2) from None


def _model(name: str | None) -> Model | str:
    if name is None:
        return scripted_model()
    try:
        return infer_model(name)
    except ImportError as error:
        raise CliError(f'model {name!r} needs a package that is not installed: {one_line(str(error))}') from error
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
    number: int, total: int, result: TurnResult, store: StepStore, context: _Context, width: int
) -> list[str]:
    title = f'── turn {number}/{total} · run {result.run_id} '
    lines = ['', title + '─' * max(width - len(title), 3)]
    rendered = [_message_lines(message, width) for message in result.new_messages]
    # Compaction runs before the run's first model request, so it is shown right after the prompt.
    lines.extend(rendered[0] if rendered else [])
    if result.new_messages and DETAIL in _text(result.new_messages[0]) and not context.recovered:
        lines.extend(field_lines('detail', f'{DETAIL} is what the last turn will ask for', width))
    lines.extend(_compaction_lines(number, result, context, width))
    for message_lines in rendered[1:]:
        lines.extend(message_lines)
    summary = await read_run(store, result.run_id)
    sizes = ', '.join(str(size) for size in summary.snapshot_sizes)
    states = 'all complete' if summary.interrupted == 0 else f'{summary.interrupted} interrupted'
    new = len(result.new_messages)
    lines.extend(
        field_lines(
            'persisted',
            f"{len(summary.snapshot_sizes)} snapshots ({sizes} messages, {states}); the run's record: "
            f'{summary.record_size} messages ({max(summary.record_size - new, 0)} inherited, {new} new)',
            width,
        )
    )
    if number == total and DETAIL in result.output:
        context.recovered = True
        where = f', although compaction dropped it from the context in turn {context.dropped_in_turn}'
        lines.extend(field_lines('recovered', f'{DETAIL} verbatim{where if context.dropped_in_turn else ""}', width))
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
        shown = [*shown[:_RESULT_LINES], f'... ({len(shown) - _RESULT_LINES} more lines)']
    return [(head + '│ ' if index == 0 else rule) + line for index, line in enumerate(shown)]


def _compaction_lines(number: int, result: TurnResult, context: _Context, width: int) -> list[str]:
    dropped = compaction_marker_count(result.history[0]) if result.history else 0
    # What the run kept of the history it was given: a later answer may quote the detail again.
    kept = result.history[: len(result.history) - len(result.new_messages)]
    in_context = any(DETAIL in _text(message) for message in kept)
    lines: list[str] = []
    if dropped > context.dropped:
        text = (
            f'the window dropped {dropped - context.dropped} more messages from the context ({dropped} so far); '
            f'the context now holds {len(result.history)}. The store still has every one of them.'
        )
        if context.detail_in_context and not in_context:
            context.dropped_in_turn = number
            text += ' The export path left the context with them.'
        lines.extend(field_lines('compaction', text, width))
    context.dropped = dropped
    context.detail_in_context = any(DETAIL in _text(message) for message in result.history)
    return lines


def _text(message: ModelMessage) -> str:
    return ' '.join(str(getattr(part, 'content', '')) for part in message.parts)


def _footer(context: _Context, store: str, conversation_id: str, width: int) -> list[str]:
    if context.recovered:
        verdict = f'Recovered {DETAIL} verbatim from the persisted history after compaction dropped it.'
    else:
        verdict = f'The agent did not quote {DETAIL}: see its last answer above.'
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
