"""Bind addresses, tokens and the missing-extra hint, without starting a server."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from durable_recall.cli import main
from durable_recall.cli._errors import CliError
from durable_recall.cli._serve_net import check_bind, is_loopback, read_token


@pytest.mark.parametrize('host', ['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]'])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize('host', ['0.0.0.0', '::', '10.0.0.5', 'recall.example', ''])
def test_other_addresses_need_a_token(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(CliError, match='bearer token is required'):
        check_bind(host, None)
    check_bind(host, 'ZEBRA-0123456789abcdef')


def test_the_token_file_wins_over_the_environment(tmp_path: Path) -> None:
    path = tmp_path / 'token'
    path.write_text('  ZEBRA-from-the-file-0123\n')
    env = {'DURABLE_RECALL_TOKEN': 'ZEBRA-from-the-env-0123456'}
    assert read_token(str(path), env) == 'ZEBRA-from-the-file-0123'
    assert read_token(None, env) == 'ZEBRA-from-the-env-0123456'
    assert read_token(None, {}) is None
    with pytest.raises(CliError, match='cannot read --token-file'):
        read_token(str(tmp_path / 'missing'), env)


def test_the_cli_names_the_serve_extra_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: None if name == 'mcp' else real(name, *a))
    for command in ('mcp', 'ui'):
        assert main([command, '--store', 'nowhere.db', '--all']) == 1
        err = capsys.readouterr().err
        assert "pip install 'durable-recall[serve]'" in err and 'mcp not installed' in err
