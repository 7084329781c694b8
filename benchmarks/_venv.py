"""The reference's own virtual environment, created on first use and kept in `benchmarks/.cache/`.

The reference is `pydantic-ai-harness==0.62.0`, which pins `pydantic-ai-slim==2.62.0`, so it cannot
share this project's venv (2.68). It is installed from PyPI into a separate venv with `uv` when
that is on the PATH (seconds), else with `python -m venv` and pip.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ('CACHE', 'REFERENCE', 'reference_python')

CACHE = Path(__file__).resolve().parent / '.cache'
REFERENCE = 'pydantic-ai-harness==0.62.0'
_VENV = CACHE / 'harness-0.62.0'
_READY = _VENV / '.ready'


def reference_python(log: bool = True) -> tuple[Path, float]:
    """The reference venv's Python, and the seconds spent creating the venv (0 when cached)."""
    python = _VENV / 'bin' / 'python'
    if _READY.exists() and python.exists():
        return python, 0.0
    started = time.perf_counter()
    if log:
        print(f'creating the reference venv in {_VENV} ({REFERENCE}) ...', file=sys.stderr, flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    if _VENV.exists():
        shutil.rmtree(_VENV)
    uv = shutil.which('uv')
    base = shutil.which('python3.11') or sys.executable
    if uv is not None:
        subprocess.run([uv, 'venv', '--quiet', '--python', base, str(_VENV)], check=True)
        subprocess.run([uv, 'pip', 'install', '--quiet', '--python', str(python), REFERENCE], check=True)
    else:
        subprocess.run([base, '-m', 'venv', str(_VENV)], check=True)
        subprocess.run(
            [str(python), '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', REFERENCE], check=True
        )
    check = 'import pydantic_ai_harness.conversation_search, pydantic_ai_harness.step_persistence'
    subprocess.run([str(python), '-c', check], check=True)
    _READY.write_text(REFERENCE + '\n')
    return python, time.perf_counter() - started
