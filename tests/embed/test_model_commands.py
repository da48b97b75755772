"""CLI glue: fetch-model, models and embed-server registered on an argparse parser."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cpersona.cli.model_commands import add_model_commands
from cpersona.config import Settings


def run(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(prog="cpersona")
    add_model_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args, settings))


def test_fetch_model_from_dir(
    minilm_source_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tmp_path / "models"
    code = run(
        ["fetch-model", "all-minilm-l6-v2", "--from", str(minilm_source_dir), "--dir", str(models)],
        Settings(),
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert out.strip() == str(models / "all-minilm-l6-v2")
    assert "licence" in err and "Apache-2.0" in err  # licence notice on stderr, not stdout
    assert f"CPERSONA_MODELS_DIR={models}" in err


def test_fetch_model_defaults_to_settings(minilm_source_dir: Path, tmp_path: Path) -> None:
    settings = Settings(models_dir=tmp_path / "m", embedding_model="all-minilm-l6-v2")
    assert run(["fetch-model", "--from", str(minilm_source_dir)], settings) == 0
    assert (tmp_path / "m" / "all-minilm-l6-v2" / "install.json").is_file()


def test_fetch_model_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["fetch-model", "nope", "--from", str(tmp_path), "--dir", str(tmp_path)], Settings())
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "unknown model 'nope'" in err


def test_models_lists_installed_and_active(
    minilm_models_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(models_dir=minilm_models_dir, embedding_model="all-minilm-l6-v2")
    assert run(["models", "--json"], settings) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["all-minilm-l6-v2"]["installed"] and rows["all-minilm-l6-v2"]["active"]
    assert not rows["jina-v5-nano"]["installed"] and not rows["jina-v5-nano"]["active"]
    assert rows["all-minilm-l6-v2"]["source"].startswith("from:")
    assert run(["models"], settings) == 0
    text = capsys.readouterr().out
    assert "* all-minilm-l6-v2" in text and "not installed" in text


def test_models_shows_fetch_command_for_missing_active(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["models", "--dir", str(tmp_path)], Settings()) == 0
    assert f"cpersona fetch-model jina-v5-nano --dir {tmp_path}" in capsys.readouterr().out


def test_embed_server_refuses_without_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["embed-server", "--dir", str(tmp_path), "--port", "0"], Settings()) == 1
    assert "cpersona fetch-model jina-v5-nano" in capsys.readouterr().err
    assert run(["embed-server"], Settings(embedding_mode="none")) == 1
