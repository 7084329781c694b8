"""A chat app's conversation as a script: one run per exchange, chat-length text.

The long-runs workload (`benchmarks._script.generate_conversation`) is an agent at work: runs of
many tool steps whose results hold code and logs. A chat app persists another shape, the one
where what a run costs regardless of its size shows: every exchange (a user prompt and the
assistant's reply) is its own `Agent.run`, inheriting the most recent messages through
`message_history` (a sliding window of `CHAT_WINDOW`), and adds two messages of a few sentences,
or four when the assistant calls a tool first (about one exchange in twenty).

The text comes from the same `Writer` as the long runs (a Zipf vocabulary and the conversation's
own paths, functions and ids), so `make_queries` makes the same kinds of queries from it. The
tools are two of `TOOL_NAMES`, so `replay_with_agent` can replay a chat like any script.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from benchmarks._script import SCRIPT_VERSION, Call, Conversation, Run, Step, Writer, new_writer, token_estimate

__all__ = ('CHAT_WINDOW', 'TOOL_SHARE', 'generate_chat')

CHAT_WINDOW = 20
"""`SlidingWindowCompaction(max_messages=...)` of the chat workload: the recent messages a run inherits."""

TOOL_SHARE = 0.05
"""Share of exchanges where the assistant calls a tool before it answers."""


def generate_chat(seed: int, exchanges: int, *, conversation_id: str = 'bench-chat') -> Conversation:
    """A chat of `exchanges` runs, each a prompt and a reply (a tool call and its return in between, sometimes).

    Deterministic: the same arguments give the same chat, in any process.
    """
    rng = random.Random(f'chat:{SCRIPT_VERSION}:{seed}:{conversation_id}')
    writer = new_writer(rng)
    # The model's input is the window it was handed: the tokens of the most recent messages.
    window: deque[int] = deque(maxlen=CHAT_WINDOW)
    runs: list[Run] = []
    for index in range(exchanges):
        run_id = f'{conversation_id}-r{index:05d}'
        prompt = _prompt(writer)
        window.append(token_estimate(prompt))
        steps: list[Step] = []
        if rng.random() < TOOL_SHARE:
            text = writer.sentence(4, 10) if rng.random() < 0.3 else ''
            call = _tool_call(writer, f'call_{run_id}_0')
            output = token_estimate(text) + token_estimate(str(call.args))
            steps.append(Step(text=text, calls=(call,), input_tokens=sum(window), output_tokens=output))
            window.append(output)
            window.append(token_estimate(str(call.result)))
        answer = _answer(writer)
        steps.append(Step(text=answer, calls=(), input_tokens=sum(window), output_tokens=token_estimate(answer)))
        window.append(token_estimate(answer))
        runs.append(Run(run_id=run_id, prompt=prompt, steps=tuple(steps)))
    return Conversation(conversation_id=conversation_id, runs=tuple(runs))


def _prompt(writer: Writer) -> str:
    """A sentence or two, often a question."""
    rng = writer.rng
    text = ' '.join(writer.sentence(4, 16) for _ in range(rng.choice((1, 1, 1, 2))))
    return text[:-1] + '?' if rng.random() < 0.4 else text


def _answer(writer: Writer) -> str:
    """A few sentences; sometimes a short list, now and then a snippet of code."""
    rng = writer.rng
    roll = rng.random()
    if roll < 0.03:
        return writer.sentence() + '\n\n```python\n' + writer.code(rng.randint(3, 8)) + '\n```'
    if roll < 0.13:
        items = '\n'.join(f'- {writer.sentence(3, 10)}' for _ in range(rng.randint(2, 4)))
        return writer.sentence() + '\n' + items
    return writer.paragraph(1, 3)


def _tool_call(writer: Writer, call_id: str) -> Call:
    """A lookup a chat assistant makes: a docs search or an API read, with a small result."""
    rng = writer.rng
    result: Any
    if rng.random() < 0.5:
        args: dict[str, Any] = {'query': ' '.join(writer.words(rng.randint(2, 5))), 'limit': 3}
        result = [
            {
                'title': writer.sentence(3, 8),
                'url': f'https://docs.{writer.project}.dev/{"/".join(writer.words(2))}',
                'snippet': writer.sentence(8, 20),
            }
            for _ in range(rng.randint(1, 3))
        ]
        return Call(tool='search_docs', args=args, call_id=call_id, result=result)
    resource = writer.words(1)[0]
    args = {'method': 'GET', 'url': f'https://api.{writer.project}.internal/v1/{resource}/{writer.hex_id()}'}
    result = {
        'status': rng.choice((200, 200, 200, 404)),
        'body': {
            'id': writer.hex_id(),
            'name': ' '.join(writer.words(3)),
            'updated_at': writer.timestamp(),
            'items': [{'id': writer.hex_id(), 'value': rng.randint(0, 10_000)} for _ in range(rng.randint(1, 4))],
        },
    }
    return Call(tool='http_request', args=args, call_id=call_id, result=result)
