"""`cpersona register HOST`, run as the installed script on real config files of each host's shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CPERSONA = str(Path(sys.executable).with_name("cpersona"))

TWO_SERVERS = {
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_TRACE": "1"}},
    },
}


def env_for(home: Path, **extra: str) -> dict[str, str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_", "XDG_CONFIG"))
    }
    base.update(HOME=str(home))
    base.update(extra)
    return base


def register(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CPERSONA, "register", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".*.bak"))


def seed(path: Path, data: Any) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path.read_bytes()


@pytest.mark.slow
def test_claude_desktop_keeps_two_other_servers_backs_up_and_is_idempotent(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"  # the Linux location
    old = seed(config, TWO_SERVERS)
    env = env_for(
        tmp_path,
        CPERSONA_DB_PATH="memory/m.db",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(tmp_path / "models"),
        CPERSONA_TRANSPORT="streamable-http",
    )
    done = register(env, "claude-desktop", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(config.read_text())
    assert {k: v for k, v in data["mcpServers"].items() if k != "cpersona"} == TWO_SERVERS["mcpServers"]
    assert data["globalShortcut"] == "Ctrl+Space"
    assert data["mcpServers"]["cpersona"] == {
        "command": CPERSONA,
        "args": ["serve"],
        "env": {
            "CPERSONA_DB_PATH": str(tmp_path / "memory" / "m.db"),
            "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
            "CPERSONA_MODELS_DIR": str(tmp_path / "models"),
        },
    }
    (backup,) = backups(config)
    assert backup.read_bytes() == old
    assert f"added server 'cpersona' in {config} (the old file is kept as {backup})" in done.stdout
    assert "CPERSONA_TRANSPORT" in done.stdout  # said to be left out
    assert "quit Claude Desktop" in done.stdout

    written = config.read_bytes()
    again = register(env, "claude-desktop", cwd=tmp_path)
    assert again.returncode == 0 and "nothing written" in again.stdout
    assert config.read_bytes() == written and backups(config) == [backup]


@pytest.mark.slow
def test_a_broken_config_is_refused_and_left_untouched(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"mcpServers": {"git": {"command": "uvx"},}}')
    before = (config.read_bytes(), config.stat().st_mtime_ns)
    done = register(env_for(tmp_path), "claude-desktop")
    assert done.returncode == 1
    assert "is not valid JSON (line 1, column 43" in done.stderr and "left untouched" in done.stderr
    assert (config.read_bytes(), config.stat().st_mtime_ns) == before
    assert sorted(p.name for p in config.parent.iterdir()) == ["claude_desktop_config.json"]


@pytest.mark.slow
def test_claude_code_user_scope_keeps_the_rest_of_claude_json(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    state = {
        "numStartups": 12,
        "projects": {"/work/app": {"mcpServers": {"local-one": {"command": "x"}}, "allowedTools": []}},
        "mcpServers": {"github": {"type": "http", "url": "https://example.invalid/mcp"}},
        "oauthAccount": {"emailAddress": "ada@example.invalid"},
    }
    seed(config, state)
    done = register(env_for(tmp_path), "claude-code")
    assert done.returncode == 0, done.stderr
    data = json.loads(config.read_text())
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        k: v for k, v in state.items() if k != "mcpServers"
    }
    assert data["mcpServers"]["github"] == state["mcpServers"]["github"]
    assert data["mcpServers"]["cpersona"]["command"] == CPERSONA
    assert 'claude mcp add-json --scope user cpersona \'{"command": ' in done.stdout


@pytest.mark.slow
def test_cursor_global_and_project_and_mcp_json_in_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = env_for(tmp_path)
    assert register(env, "cursor", cwd=project).returncode == 0
    assert "cpersona" in json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]
    seed(project / ".cursor" / "mcp.json", {"mcpServers": {"other": {"command": "o"}}})
    assert register(env, "cursor", "--project", cwd=project).returncode == 0
    assert set(json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]) == {
        "other",
        "cpersona",
    }
    assert register(env, "mcp-json", "--name", "memory", cwd=project).returncode == 0
    assert set(json.loads((project / ".mcp.json").read_text())["mcpServers"]) == {"memory"}
    usage = register(env, "mcp-json", "--project", cwd=project)
    assert usage.returncode == 2 and "--project applies to cursor only" in usage.stderr


@pytest.mark.slow
def test_print_writes_nothing_and_path_overrides(tmp_path: Path) -> None:
    env = env_for(tmp_path, CPERSONA_RECALL_MODE="rrf")
    printed = register(env, "claude-desktop", "--print")
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["mcpServers"]["cpersona"]
    assert entry["command"] == CPERSONA and entry["args"] == ["serve"]
    assert entry["env"]["CPERSONA_RECALL_MODE"] == "rrf"
    assert "printed only" in printed.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere under HOME
    target = tmp_path / "elsewhere.json"
    assert register(env, "cursor", "--path", str(target)).returncode == 0
    assert json.loads(target.read_text())["mcpServers"]["cpersona"] == entry


@pytest.mark.slow
@pytest.mark.parametrize("home", ["", "relative/home"])
def test_an_empty_or_relative_home_is_refused_and_nothing_is_written(tmp_path: Path, home: str) -> None:
    # Issue 36 point 11: HOME="" wrote /.claude.json, a relative HOME wrote under the current folder.
    env = env_for(tmp_path)
    env["HOME"] = home
    done = register(env, "claude-code", cwd=tmp_path)
    assert done.returncode == 1 and "HOME" in done.stderr and "absolute" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert not Path("/.claude.json").exists() or "cpersona" not in Path("/.claude.json").read_text()


@pytest.mark.slow
def test_a_credential_in_a_query_parameter_makes_the_config_and_backup_private(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    seed(config, TWO_SERVERS)
    config.chmod(0o644)
    env = env_for(tmp_path, CPERSONA_DB_URL="postgresql://db.invalid/mem?password=hunter2")
    done = register(env, "cursor")
    assert done.returncode == 0, done.stderr
    assert "credential" in done.stdout and "0600" in done.stdout
    assert json.loads(config.read_text())["mcpServers"]["cpersona"]["env"]["CPERSONA_DB_URL"].endswith(
        "hunter2"
    )
    for path in (config, *backups(config)):
        assert os.stat(path).st_mode & 0o777 == 0o600, path
    assert len(backups(config)) == 1
