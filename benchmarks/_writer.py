"""The text of the benchmarks' scripted conversations: Zipf prose and a project's own identifiers.

Split from `_script` (which shapes runs, steps and tool calls out of this text); like it, this
module needs only the standard library, so the reference's venv runs it too.
"""

from __future__ import annotations

import functools
import random
from datetime import UTC, datetime, timedelta

__all__ = ('COMMON', 'START', 'Writer', 'new_writer', 'shared_vocabulary')

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
"""When every scripted conversation's clock starts."""


# --- vocabulary -------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


COMMON = _words(
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
    seen: set[str] = set(COMMON) | set(_DOMAIN)
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
        tail = _pseudo_words(self.SIZE - len(COMMON) - len(_DOMAIN))
        ranked = list(COMMON)
        # Software words sit among the first couple of thousand ranks, pseudo-words fill the rest.
        spread = random.Random(7)
        domain_ranks = sorted(spread.sample(range(len(COMMON), 2_000), len(_DOMAIN)))
        domain = iter(_DOMAIN)
        rest = iter(tail)
        for rank in range(len(COMMON), self.SIZE):
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
def shared_vocabulary() -> _Vocabulary:
    return _Vocabulary()


# --- text ------------------------------------------------------------------------------------


def new_writer(rng: random.Random) -> Writer:
    """A conversation's writer, its project name drawn from `rng` (the first draw of a conversation)."""
    return Writer(rng, rng.choice(shared_vocabulary().ranked[500:5_000]))


class Writer:
    """Text of one conversation: Zipf prose and the identifiers of its own project.

    Public so that other workloads (`benchmarks._chat`) write the same kind of text.
    """

    def __init__(self, rng: random.Random, project: str) -> None:
        self.rng = rng
        vocabulary = shared_vocabulary()
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
