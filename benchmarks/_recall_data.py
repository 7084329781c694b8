"""A seeded multi-session chat whose evidence is known, and questions about it that do not quote it.

The chat is a person talking to an assistant over many sessions (days apart), one agent run per
exchange. Most exchanges are filler (Zipf prose from `benchmarks._script.Writer`, with the same
places and people as the facts now and then, so that matching a name is not enough). Some
exchanges state a *fact*; a few facts are told over two exchanges (a teaser, then the detail).
Each fact has a question, written the way a person would ask it later:

* **paraphrase**: other forms of the words (`visit` for `visited`, `cake` for `cakes`), other
  words for the same thing (`race` for `marathon`), accents typed or not (`cafe`, `café`);
* **time**: "what did I say last week about ...", where the evidence says "yesterday" or "last
  week": the answer has to show *when* it was said;
* **context**: the question's words are in one exchange, the fact's other half in its neighbour.

The questions never copy the evidence sentence, and some share no content word with it beyond a
name: the benchmark can and does show misses. The evidence turns of a question are the user
messages that state its fact; a block shows a turn when the turn's text appears in it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from benchmarks._script import Writer, new_writer

__all__ = ('Exchange', 'Question', 'RecallChat', 'generate_recall_chat')

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

PLACES = ('Lisbon', 'Kyoto', 'Oaxaca', 'Tromsø', 'Zürich', 'Montréal', 'Tbilisi', 'Hobart')
PEOPLE = ('sister', 'uncle', 'neighbour', 'coworker', 'grandmother', 'cousin')
NAMES = ('Miso', 'Pepper', 'Juniper', 'Biscuit', 'Clementine', 'Oskar', 'Tofu', 'Nimbus')
SHOPS = ('Bäckerei Krüger', 'Sweet Lane Bakery', 'Pâtisserie Ménard', 'Crumb & Co')
STREETS = ('Rua Augusta', 'Calle Ocho', 'Elm Street', 'Königsallee', 'Rue Cler')


@dataclass(frozen=True)
class Exchange:
    """One agent run: what the user said, the reply, and when."""

    prompt: str
    reply: str
    at: datetime


@dataclass(frozen=True)
class Question:
    """A question sent to the tool, the exchanges whose prompts are its evidence, and its kind."""

    text: str
    evidence: tuple[int, ...]
    kind: str


@dataclass(frozen=True)
class RecallChat:
    """The chat and its questions."""

    conversation_id: str
    exchanges: tuple[Exchange, ...]
    questions: tuple[Question, ...]


def _facts(rng: random.Random) -> list[tuple[str, list[str], str]]:
    """`(kind, evidence prompts, question)` for one fact of each template, slots filled from `rng`."""
    place, person, shop, street = rng.choice(PLACES), rng.choice(PEOPLE), rng.choice(SHOPS), rng.choice(STREETS)
    one, two = rng.sample(NAMES, 2)
    guests = rng.randint(5, 14)
    return [
        (
            'paraphrase',
            [f'I visited {place} with my {person} over the weekend, the old town was packed.'],
            f'when did I visit {place}?',
        ),
        (
            'paraphrase',
            [f'My {person} loved the birthday cakes we ordered from {shop}.'],
            f'which bakery made the birthday cake for my {person}?',
        ),
        (
            'time',
            [f'We adopted two kittens yesterday, {one} and {two}!'],
            'what did I say last week about adopting a kitten?',
        ),
        (
            'paraphrase',
            [f'I signed up for a half marathon in {place} next month, training starts now.'],
            'where is the race I am getting ready for?',
        ),
        (
            'paraphrase',
            [f'The Café {one} on {street} closed down, we used to go every Sunday.'],
            f'is that cafe on {street} still open?',
        ),
        (
            'context',
            ['Guess what I bought yesterday?', f'A telescope for my {person}, it is for the graduation.'],
            'what did I buy for the graduation?',
        ),
        (
            'paraphrase',
            ['I have been practising the cello every evening this month.'],
            'how often do I practice my instrument?',
        ),
        (
            'time',
            [f'My flight to {place} got cancelled last week and rebooked for Thursday.'],
            f'what did I mention recently about flights to {place}?',
        ),
        (
            'paraphrase',
            ['I finally fixed the leaking kitchen tap myself, no plumber needed.'],
            'did I get someone to repair the kitchen sink?',
        ),
        (
            'time',
            [f'We are hosting a dinner party for {guests} guests on Saturday.'],
            'how many people are coming to our dinner, as I said the other day?',
        ),
        (
            'context',
            [
                f'My {person} called with big news about the new job.',
                f'She starts at the hospital in {place} in March.',
            ],
            f'where does my {person} start working?',
        ),
        (
            'paraphrase',
            ['Our basement flooded after the storms and the carpets are ruined.'],
            'what happened in the basement with the storm?',
        ),
    ]


def _filler(writer: Writer, rng: random.Random) -> tuple[str, str]:
    """An exchange about nothing in particular; now and then it names a place or a person of the facts."""
    prompt = writer.sentence(5, 14)
    if rng.random() < 0.3:
        prompt = f'{prompt[:-1]} and my {rng.choice(PEOPLE)} mentioned {rng.choice(PLACES)}.'
    if rng.random() < 0.15:
        prompt = f'{prompt} Also the {rng.choice(("birthday", "dinner", "flight", "cafe", "kitchen", "job"))} thing.'
    reply = writer.paragraph(1, 2)
    return prompt, reply


def generate_recall_chat(seed: int, sessions: int, per_session: int, rounds: int) -> RecallChat:
    """A chat of `sessions` sessions of `per_session` exchanges, with `rounds` facts of each template.

    Deterministic: the same arguments give the same chat and questions.
    """
    rng = random.Random(f'recall:{seed}')
    writer = new_writer(rng)
    total = sessions * per_session
    facts = [fact for _ in range(rounds) for fact in _facts(rng)]
    # Each fact's first exchange, far enough apart that facts do not share exchanges.
    slots = sorted(rng.sample(range(0, total - 1, 2), min(len(facts), (total - 1) // 2)))
    rng.shuffle(facts)
    planned: dict[int, str] = {}
    questions: list[Question] = []
    for slot, (kind, prompts, question) in zip(slots, facts, strict=False):
        evidence = tuple(range(slot, slot + len(prompts)))
        for index, prompt in zip(evidence, prompts, strict=True):
            planned[index] = prompt
        questions.append(Question(question, evidence, kind))
    exchanges: list[Exchange] = []
    at = START
    for index in range(total):
        if index and index % per_session == 0:
            at = at.replace(hour=9, minute=0) + timedelta(days=rng.randint(1, 4), hours=rng.randint(0, 10))
        else:
            at += timedelta(minutes=rng.randint(1, 6))
        prompt, reply = _filler(writer, rng)
        if index in planned:
            prompt = planned[index]
            reply = 'Thanks for telling me. ' + writer.sentence(4, 10)
        exchanges.append(Exchange(prompt, reply, at))
    return RecallChat(f'recall-{seed}', tuple(exchanges), tuple(questions))
