"""The entry: this installation's executable, ``serve``, and the CPERSONA_* env in force, made absolute."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.hosts.entry import holds_credential, installation_command, server_entry, server_env


def env_of(environ: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    return server_env(Settings.from_env(environ), environ)


def test_db_path_and_model_are_always_there_and_the_default_models_folder_is_not() -> None:
    env, left_out = env_of({})
    assert set(env) == {"CPERSONA_DB_PATH", "CPERSONA_EMBEDDING_MODEL"}
    assert env["CPERSONA_EMBEDDING_MODEL"] == "jina-v5-nano" and Path(env["CPERSONA_DB_PATH"]).is_absolute()
    assert left_out == {}


def test_relative_paths_become_absolute_and_every_other_setting_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env, _ = env_of(
        {
            "CPERSONA_DB_PATH": "data/m.db",
            "CPERSONA_MODELS_DIR": "~/models",
            "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
            "CPERSONA_RECALL_MODE": "rrf",
            "CPERSONA_OPERATING_CONTEXT_PATH": "ctx.toml",
            "CPERSONA_EMPTY": "  ",
            "HOME_OTHER": "not ours",
        }
    )
    assert env == {
        "CPERSONA_DB_PATH": str(tmp_path / "data" / "m.db"),
        "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
        "CPERSONA_MODELS_DIR": str(Path("~/models").expanduser()),
        "CPERSONA_OPERATING_CONTEXT_PATH": str(tmp_path / "ctx.toml"),
        "CPERSONA_RECALL_MODE": "rrf",
    }


def test_http_and_ui_settings_are_left_out_with_the_reason() -> None:
    env, left_out = env_of(
        {
            "CPERSONA_TRANSPORT": "streamable-http",
            "CPERSONA_AUTH_TOKEN": "s3cret",
            "CPERSONA_HTTP_PORT": "9000",
            "CPERSONA_ACL_FILE": "/etc/acl.toml",
            "CPERSONA_UI_PORT": "9001",
        }
    )
    assert not {"CPERSONA_TRANSPORT", "CPERSONA_AUTH_TOKEN", "CPERSONA_HTTP_PORT", "CPERSONA_ACL_FILE"} & set(
        env
    )
    assert left_out["CPERSONA_TRANSPORT"] == "the host talks to the server over stdio"
    assert set(left_out) == {
        "CPERSONA_TRANSPORT",
        "CPERSONA_AUTH_TOKEN",
        "CPERSONA_HTTP_PORT",
        "CPERSONA_ACL_FILE",
        "CPERSONA_UI_PORT",
    }


def test_aliases_are_written_under_the_canonical_names() -> None:
    env, _ = env_of({"EMBEDDING_MODE": "http", "EMBEDDING_HTTP_URL": "http://127.0.0.1:9/embed"})
    assert (
        env["CPERSONA_EMBEDDING_MODE"] == "http"
        and env["CPERSONA_EMBEDDING_URL"] == "http://127.0.0.1:9/embed"
    )
    assert "CPERSONA_EMBEDDING_MODEL" not in env
    off, _ = env_of({"CPERSONA_EMBEDDING_MODE": "none"})
    assert off["CPERSONA_EMBEDDING_MODE"] == "none" and "CPERSONA_EMBEDDING_MODEL" not in off


def test_a_postgres_url_replaces_the_file_and_its_password_is_flagged() -> None:
    environ = {"CPERSONA_DB_URL": "postgresql://me:pw@db.example/mem"}
    entry = server_entry(Settings.from_env(environ), environ)
    assert "CPERSONA_DB_PATH" not in entry.env and entry.env["CPERSONA_DB_URL"] == environ["CPERSONA_DB_URL"]
    assert entry.secrets == ["CPERSONA_DB_URL"]
    plain = {"CPERSONA_DB_URL": "postgresql:///mem"}
    assert server_entry(Settings.from_env(plain), plain).secrets == []


def test_the_command_is_this_installations_script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    beside = Path(sys.executable).parent / ("cpersona.exe" if os.name == "nt" else "cpersona")
    monkeypatch.setattr(sys, "argv", ["/somewhere/else/pytest"])
    assert installation_command() == (str(beside), ["serve"])  # the venv's script, not one on PATH
    script = tmp_path / "bin" / "cpersona"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["bin/cpersona", "register"])
    assert installation_command() == (str(script), ["serve"])  # as started, made absolute
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(sys, "argv", ["-c"])
    assert installation_command() == (str(tmp_path / "python"), ["-m", "cpersona", "serve"])


def test_oauth_settings_stay_on_the_http_server() -> None:
    env, left_out = env_of(
        {"CPERSONA_OAUTH_ISSUER": "https://id.example", "CPERSONA_OAUTH_RESOURCE": "https://m.example/mcp"}
    )
    assert not {"CPERSONA_OAUTH_ISSUER", "CPERSONA_OAUTH_RESOURCE"} & set(env)
    assert left_out["CPERSONA_OAUTH_ISSUER"] == "OAuth applies over HTTP, not stdio"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CPERSONA_DB_URL", "postgresql://me:pw@db.example/mem"),
        ("CPERSONA_DB_URL", "postgresql://db.example/mem?password=pw"),  # issue 36 point 5
        ("CPERSONA_DB_URL", "postgresql://db.example/mem?sslmode=require&sslpassword=pw"),
        ("CPERSONA_DB_URL", "host=db.example dbname=mem password=pw"),
        ("CPERSONA_DB_URL", "postgresql://a-token-as-user@db.example/mem"),
        ("CPERSONA_EMBEDDING_URL", "http://embed.example/embed?api_key=k"),
        ("CPERSONA_EMBEDDING_URL", "http://embed.example/embed?token=t"),
        ("CPERSONA_EMBEDDING_URL", "https://u:pw@embed.example/embed"),
        ("CPERSONA_UPDATE_INDEX_URL", "https://u:pw@mirror.example/pypi"),
        ("CPERSONA_SOME_API_KEY", "k"),
    ],
)
def test_every_credential_in_a_variable_is_flagged(name: str, value: str) -> None:
    assert holds_credential(name, value)
    if value.startswith("host="):  # a libpq key=value string: the settings take URLs only
        return
    environ = {name: value, "CPERSONA_EMBEDDING_MODE": "none"}
    assert name in server_entry(Settings.from_env(environ), environ).secrets


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CPERSONA_DB_URL", "postgresql:///mem"),
        ("CPERSONA_DB_URL", "postgresql://db.example/mem?sslmode=require"),
        ("CPERSONA_EMBEDDING_URL", "http://localhost:8080/embed"),
        ("CPERSONA_EMBED_MAX_TOKENS", "512"),
        ("CPERSONA_DB_PATH", "/home/me/keys/memory.db"),
        ("CPERSONA_UPDATE_INDEX_URL", "https://pypi.org/pypi"),
    ],
)
def test_plain_values_are_not_flagged(name: str, value: str) -> None:
    assert not holds_credential(name, value)
