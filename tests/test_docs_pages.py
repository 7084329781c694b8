"""The README stays an introduction and the documentation describes the product, not its making.

The site itself is built by `mkdocs build --strict` in CI (`.ci/run`), which checks every link,
anchor, nav entry and API cross-reference; the examples run in `tests/test_doc_examples.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / 'README.md'
PAGES = [README, *sorted((ROOT / 'docs').rglob('*.md'))]

_NARRATIVE = re.compile(r"this session|this round|issue [0-9]+|agents'", re.IGNORECASE)
"""Development history (what a session or round changed, issue numbers, other agents' runs) belongs in git."""


def test_readme_is_an_introduction() -> None:
    lines = README.read_text().count('\n')
    assert lines <= 300, f'README.md has {lines} lines: move detail into a docs/ page'


def test_readme_gives_the_two_commands() -> None:
    text = README.read_text()
    demo = "python3 -m venv .venv && .venv/bin/pip install -e '.[demo]' && .venv/bin/durable-recall demo"
    assert demo in text
    assert '\nbash .ci/run\n' in text
    assert '`python -m pytest`' in text  # the test command, which .ci/run's `run_tests` runs


@pytest.mark.parametrize('page', PAGES, ids=[page.relative_to(ROOT).as_posix() for page in PAGES])
def test_no_development_narrative(page: Path) -> None:
    found = [match.group(0) for match in _NARRATIVE.finditer(page.read_text())]
    assert not found, f'{page.relative_to(ROOT)} tells development history: {found}'


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / 'mkdocs.yml').read_text()
    pages = sorted(page.relative_to(ROOT / 'docs').as_posix() for page in (ROOT / 'docs').rglob('*.md'))
    missing = [page for page in pages if not re.search(rf':\s+{re.escape(page)}\s*$', nav, re.MULTILINE)]
    assert not missing, f'add these pages to the nav in mkdocs.yml: {missing}'
