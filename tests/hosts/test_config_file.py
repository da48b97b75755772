"""Merging the server entry into real host config files: nothing else lost, idempotent, backups, refusals."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from required import unavailable

from cpersona.hosts.config_file import ConfigFileError, merge_entry, read_config, register_entry

ENTRY = {"command": "/opt/venv/bin/cpersona", "args": ["serve"], "env": {"CPERSONA_DB_PATH": "/data/m.db"}}

TWO_SERVERS = {
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_TRACE": "1"}},
    },
    "preferences": {"theme": "dark"},
}


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".*.bak"))


def write(path: Path, data: Any) -> bytes:
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return path.read_bytes()


def test_an_existing_config_with_two_other_servers_keeps_them_and_gets_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    old = write(path, TWO_SERVERS)
    result = register_entry(path, "cpersona", ENTRY)
    assert result.change == "added" and result.path == path
    data = json.loads(path.read_text())
    assert data["mcpServers"]["filesystem"] == TWO_SERVERS["mcpServers"]["filesystem"]
    assert data["mcpServers"]["git"] == TWO_SERVERS["mcpServers"]["git"]
    assert data["mcpServers"]["cpersona"] == ENTRY
    assert data["globalShortcut"] == "Ctrl+Space" and data["preferences"] == {"theme": "dark"}
    assert list(data) == list(TWO_SERVERS)  # top-level keys keep their order
    assert result.backup is not None and result.backup.read_bytes() == old
    assert backups(path) == [result.backup]


def test_a_second_register_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, TWO_SERVERS)
    register_entry(path, "cpersona", ENTRY)
    after_first = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    again = register_entry(path, "cpersona", ENTRY)
    assert again.change == "unchanged" and again.backup is None
    assert path.read_bytes() == after_first and path.stat().st_mtime_ns == mtime
    assert len(backups(path)) == 1  # only the first write made one


@pytest.mark.parametrize(
    "text",
    [
        '{"mcpServers": {"git": {"command": "uvx"},}}',
        "{not json",
        '["a", "list"]',
        '{"mcpServers": []}',
        "\xff\xfe",
    ],
)
def test_a_file_that_is_not_a_config_is_refused_and_left_untouched(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".mcp.json"
    path.write_bytes(text.encode("latin-1"))
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    with pytest.raises(ConfigFileError, match="left untouched"):
        register_entry(path, "cpersona", ENTRY)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert backups(path) == [] and sorted(p.name for p in tmp_path.iterdir()) == [".mcp.json"]


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{\n  "mcpServers": {\n    "a": 1,\n  }\n}\n')
    with pytest.raises(ConfigFileError, match=r"line 4, column 3"):
        read_config(path)


def test_absent_blank_and_bom_files_are_configs(tmp_path: Path) -> None:
    absent = tmp_path / "new" / "dir" / "mcp.json"
    assert register_entry(absent, "cpersona", ENTRY).change == "added"
    assert json.loads(absent.read_text()) == {"mcpServers": {"cpersona": ENTRY}}
    assert backups(absent) == []
    blank = tmp_path / "blank.json"
    blank.write_text("  \n")
    assert register_entry(blank, "cpersona", ENTRY).change == "added"
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(TWO_SERVERS).encode())
    register_entry(bom, "cpersona", ENTRY)
    assert set(json.loads(bom.read_text())["mcpServers"]) == {"filesystem", "git", "cpersona"}


def test_updating_our_entry_keeps_its_other_keys_and_the_persons_own_env(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    old_entry = {
        "command": "/old/bin/cpersona",
        "args": ["serve"],
        "disabled": False,
        "env": {"HF_HUB_OFFLINE": "1", "CPERSONA_DB_PATH": "/old.db", "CPERSONA_RECALL_MODE": "rrf"},
    }
    write(path, {"mcpServers": {"cpersona": old_entry, "git": {"command": "uvx"}}})
    result = register_entry(path, "cpersona", ENTRY)
    assert result.change == "updated" and result.removed_env == ["CPERSONA_RECALL_MODE"]
    entry = json.loads(path.read_text())["mcpServers"]["cpersona"]
    assert entry == {
        "command": ENTRY["command"],
        "args": ["serve"],
        "disabled": False,
        "env": {"HF_HUB_OFFLINE": "1", "CPERSONA_DB_PATH": "/data/m.db"},
    }


def test_an_old_url_entry_of_that_name_becomes_a_command_entry() -> None:
    old = {"mcpServers": {"cpersona": {"type": "http", "url": "http://127.0.0.1:8402/mcp", "headers": {}}}}
    merged, change, _ = merge_entry(old, "cpersona", ENTRY)
    assert change == "updated" and merged["mcpServers"]["cpersona"] == ENTRY


def test_a_symlinked_config_is_written_through_and_permissions_are_kept(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    write(real, TWO_SERVERS)
    real.chmod(0o600)
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    result = register_entry(link, "cpersona", ENTRY)
    assert link.is_symlink() and result.path == real
    assert "cpersona" in json.loads(real.read_text())["mcpServers"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_a_new_file_holding_a_password_is_private(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    register_entry(path, "cpersona", ENTRY, private=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_existing_open_file_holding_a_credential_becomes_private_with_its_backups(tmp_path: Path) -> None:
    # Issue 36 point 5: a 0644 file stayed 0644, and so did its .bak, with the credential inside.
    path = tmp_path / "mcp.json"
    write(path, TWO_SERVERS)
    path.chmod(0o644)
    result = register_entry(path, "cpersona", ENTRY, private=True)
    assert result.backup is not None and mode_of(result.backup) == 0o600 and mode_of(path) == 0o600
    assert json.loads(result.backup.read_text()) == TWO_SERVERS
    path.chmod(0o644)
    result.backup.chmod(0o644)  # as an older release left them
    again = register_entry(path, "cpersona", ENTRY, private=True)
    assert again.change == "unchanged" and mode_of(path) == 0o600 and mode_of(result.backup) == 0o600


def test_without_a_credential_the_files_keep_their_bits(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, TWO_SERVERS)
    path.chmod(0o644)
    result = register_entry(path, "cpersona", ENTRY)
    assert mode_of(path) == 0o644 and result.backup is not None and mode_of(result.backup) == 0o644


@pytest.mark.parametrize("bits", [0o444, 0o400, 0o440])
def test_a_read_only_file_is_refused_untouched(tmp_path: Path, bits: int) -> None:
    # Root replaces it anyway (the rename needs only the folder): the mode is the person's word.
    path = tmp_path / "mcp.json"
    before = write(path, TWO_SERVERS)
    path.chmod(bits)
    with pytest.raises(ConfigFileError, match="read-only"):
        register_entry(path, "cpersona", ENTRY)
    assert path.read_bytes() == before and mode_of(path) == bits
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp.json"]


def test_a_deeply_nested_config_is_refused_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    before = path.read_bytes()
    with pytest.raises(ConfigFileError, match="deeper than"):
        register_entry(path, "cpersona", ENTRY)
    assert path.read_bytes() == before
    path.write_text('{"mcpServers": {}, "s": "' + "[" * 1000 + '"}')  # brackets inside a string count not
    register_entry(path, "cpersona", ENTRY)


def test_a_dangling_symlink_makes_no_folders(tmp_path: Path) -> None:
    link = tmp_path / "mcp.json"
    link.symlink_to(tmp_path / "gone" / "deeper" / "mcp.json")
    with pytest.raises(ConfigFileError, match="folder does not exist"):
        register_entry(link, "cpersona", ENTRY)
    assert not (tmp_path / "gone").exists() and link.is_symlink()


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """No new file can be made in ``folder``: mode 0500, or for root (who ignores modes) ``chattr +i``."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    if shutil.which("chattr") is None:
        unavailable("chattr is not available: cannot make a folder unwritable for root")
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        unavailable(f"cannot set the immutable flag here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_an_unwritable_folder_is_refused_with_the_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "ro" / "mcp.json"
    path.parent.mkdir()
    before = write(path, TWO_SERVERS)
    with unwritable(path.parent), pytest.raises(ConfigFileError, match="cannot write"):
        register_entry(path, "cpersona", ENTRY)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    others=st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k != "cpersona"), json_values, max_size=4
    ),
    top=st.dictionaries(st.text(max_size=8).filter(lambda k: k != "mcpServers"), json_values, max_size=4),
)
def test_every_other_server_and_key_survives(
    tmp_path: Path, others: dict[str, Any], top: dict[str, Any]
) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**top, "mcpServers": others}), encoding="utf-8")
    register_entry(path, "cpersona", ENTRY)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert {k: v for k, v in data.items() if k != "mcpServers"} == top
    assert {k: v for k, v in data["mcpServers"].items() if k != "cpersona"} == others
    assert register_entry(path, "cpersona", ENTRY).change == "unchanged"
    for backup in backups(path):
        backup.unlink()
