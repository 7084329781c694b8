"""Start `durable-recall mcp|ui` as a real process on a free loopback port, and stop it by its pid."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ('Served', 'free_port', 'get', 'serve')


@dataclass(frozen=True)
class Served:
    url: str
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(('127.0.0.1', 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve(args: Sequence[str], *, token: str | None = None, ready_path: str = '/') -> Generator[Served]:
    """Run `durable-recall ARGS --port P` until the block ends; waits until it answers HTTP."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != 'DURABLE_RECALL_TOKEN'}
    if token is not None:
        env['DURABLE_RECALL_TOKEN'] = token
    process = subprocess.Popen(
        [sys.executable, '-m', 'durable_recall', *args, '--port', str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f'http://127.0.0.1:{port}'
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise AssertionError(f'server exited with {process.returncode}: {process.stderr.read().decode()}')  # type: ignore[union-attr]
            try:
                urllib.request.urlopen(url + ready_path, timeout=2).close()
                break
            except urllib.error.HTTPError:  # it answers (401 without the token, 405 for a GET of /mcp)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError('server did not start within 60 s') from None
                time.sleep(0.2)
        yield Served(url, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def get(
    url: str, headers: dict[str, str] | None = None, method: str = 'GET', data: bytes | None = None
) -> tuple[int, str]:
    """One HTTP request; the status and body, an error status included."""
    request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
