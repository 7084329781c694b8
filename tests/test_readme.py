"""The README's examples run as written: each ```python block is executed in a fresh process.

A block preceded by `<!-- not-run: reason -->` is skipped (say why in the README).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / 'README.md'
_BLOCK = re.compile(r'(<!-- not-run:[^>]*-->\s*)?```python\n(.*?)```', re.DOTALL)


def _blocks() -> list[tuple[int, str]]:
    text = README.read_text()
    return [
        (text.count('\n', 0, match.start()) + 1, match.group(2))
        for match in _BLOCK.finditer(text)
        if match.group(1) is None
    ]


def test_readme_has_examples() -> None:
    assert _blocks(), 'the README should show runnable code'


def _examples() -> list[Any]:
    # The conversation store examples need pydantic-ai-slim>=2.68; CI also runs the suite on 2.62.
    return [
        pytest.param(line, code, id=f'line{line}-', marks=[pytest.mark.conversation_store] if _NEWER in code else [])
        for line, code in _blocks()
    ]


_NEWER = 'ConversationStore'


@pytest.mark.parametrize(('line', 'code'), _examples())
def test_readme_example_runs(line: int, code: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f'README example at line {line} failed:\n{result.stdout}\n{result.stderr}'
