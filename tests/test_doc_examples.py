"""The README's and the docs' examples run as written: each ```python block is executed in a fresh process.

A block preceded by `<!-- not-run: reason -->` is skipped (say why next to it). A block preceded by
`<!-- requires: pydantic-ai 2.78 -->` runs only where pydantic-ai has that release's API (CI also runs
the examples on 2.62).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import messages

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / 'README.md'
DOCS = ROOT / 'docs'
_BLOCK = re.compile(
    r'(<!-- not-run:[^>]*-->\s*)?(<!-- requires: pydantic-ai 2\.78 -->\s*)?```python\n(.*?)```', re.DOTALL
)
HAS_278 = hasattr(messages, 'CapabilityPart')
"""Whether the installed pydantic-ai has 2.78's API (capability parts, core compaction, tool visibility)."""


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob('*.md'))] if DOCS.is_dir() else [README]


def _blocks(page: Path) -> list[tuple[int, str, bool]]:
    """Each runnable block: its line, its code, and whether it needs pydantic-ai 2.78."""
    text = page.read_text()
    return [
        (text.count('\n', 0, match.start()) + 1, match.group(3), match.group(2) is not None)
        for match in _BLOCK.finditer(text)
        if match.group(1) is None
    ]


def test_readme_has_examples() -> None:
    assert _blocks(README), 'the README should show runnable code'


_NEWER = 'ConversationStore'

_UI_VISIBILITY = 'ui_visibility'
"""Examples naming it need pydantic-ai's tool `ui_visibility` (pydantic-ai-slim>=2.78)."""


def _has_ui_visibility() -> bool:
    from pydantic_ai.tools import ToolDefinition

    return 'ui_visibility' in getattr(ToolDefinition, '__dataclass_fields__', {})


def _examples() -> list[Any]:
    # The conversation store examples need pydantic-ai-slim>=2.68; CI also runs the suite on 2.62.
    params: list[Any] = []
    for page in _pages():
        name = page.relative_to(ROOT).as_posix()
        for line, code, newest in _blocks(page):
            marks = [pytest.mark.conversation_store] if _NEWER in code else []
            if newest:
                marks.append(pytest.mark.skipif(not HAS_278, reason='needs pydantic-ai-slim>=2.78'))
            if _UI_VISIBILITY in code and not _has_ui_visibility():
                marks.append(pytest.mark.skip(reason='tool ui_visibility needs pydantic-ai-slim>=2.78'))
            params.append(pytest.param(name, line, code, id=f'{name}:{line}', marks=marks))
    return params


@pytest.mark.parametrize(('page', 'line', 'code'), _examples())
def test_example_runs(page: str, line: int, code: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f'{page} example at line {line} failed:\n{result.stdout}\n{result.stderr}'
