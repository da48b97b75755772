"""Codex's server table in config.toml: appended, replaced in place, or left alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cpersona.hosts.codex_config import register_codex_server
from cpersona.hosts.config_file import ConfigFileError

ENTRY = {"command": "/opt/cp/bin/cpersona", "args": ["serve"], "env": {"CPERSONA_AGENT_ID": "ada"}}
OWN = '# my settings\nmodel = "gpt-5"\n\n[mcp_servers.git]\ncommand = "uvx"  # keep me\n'


def test_added_then_unchanged_then_updated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(OWN)
    assert register_codex_server(path, "cpersona", ENTRY)[0] == "added"
    assert path.read_text().startswith(OWN)  # comments and layout kept
    assert register_codex_server(path, "cpersona", ENTRY) == ("unchanged", None)
    other = {**ENTRY, "env": {"CPERSONA_AGENT_ID": "bob"}}
    change, backup = register_codex_server(path, "cpersona", other)
    assert change == "updated" and backup is not None and backup.exists()
    text = path.read_text()
    assert text.startswith(OWN) and text.count("[mcp_servers.cpersona]") == 1
    assert tomllib.loads(text)["mcp_servers"]["cpersona"]["env"] == {"CPERSONA_AGENT_ID": "bob"}


def test_a_table_with_keys_of_its_own_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text = '[mcp_servers.cpersona]\ncommand = "x"\nstartup_timeout_sec = 20\n'
    path.write_text(text)
    assert register_codex_server(path, "cpersona", ENTRY) == ("present", None)
    assert path.read_text() == text


def test_a_file_that_is_not_toml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("model = \n")
    with pytest.raises(ConfigFileError, match="not valid TOML"):
        register_codex_server(path, "cpersona", ENTRY)
    assert path.read_text() == "model = \n"
