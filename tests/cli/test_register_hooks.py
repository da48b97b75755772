"""`cpersona register claude-code|codex --hooks / --policy / --remove-hooks` on a temporary HOME."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.hosts.hooks_file import is_ours
from cpersona.hosts.skill import BEGIN, END
from cpersona.memory import Memory
from tests.cli.test_register_cli import backups, env_for, register
from tests.hosts.hook_helpers import claude_input, injected

CLAUDE_SETTINGS = {
    "theme": "dark",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/branch-context.sh"}]}],
    },
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
    (home / ".claude" / "CLAUDE.md").write_text("# My rules\nAlways answer in English.\n")
    return home


def _env(home: Path) -> dict[str, str]:
    return env_for(home, CPERSONA_DB_PATH=str(home / "memory.db"), XDG_RUNTIME_DIR=str(home / "run"))


def _ours(settings: dict[str, Any]) -> dict[str, list[str]]:
    return {
        event: [h["command"] for g in groups for h in g["hooks"] if is_ours(h["command"])]
        for event, groups in settings["hooks"].items()
    }


def _snapshot(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def test_claude_code_hooks_keep_everything_else_and_a_second_run_changes_nothing(home: Path) -> None:
    env = _env(home)
    done = register(env, "claude-code", "--hooks", "--policy", "--agent-id", "alice")
    assert done.returncode == 0, done.stderr
    settings_file = home / ".claude" / "settings.json"
    settings = json.loads(settings_file.read_text())
    assert settings["theme"] == "dark" and settings["permissions"] == CLAUDE_SETTINGS["permissions"]
    assert settings["hooks"]["Stop"] == CLAUDE_SETTINGS["hooks"]["Stop"]
    assert settings["hooks"]["UserPromptSubmit"][0] == CLAUDE_SETTINGS["hooks"]["UserPromptSubmit"][0]
    ours = _ours(settings)
    assert sorted(e for e, c in ours.items() if c) == ["PreCompact", "SessionStart", "UserPromptSubmit"]
    assert all(len(c) == 1 and "--agent-id alice" in c[0] for e, c in ours.items() if c)
    assert len(backups(settings_file)) == 1
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["cpersona"]
    assert entry["env"]["CPERSONA_AGENT_ID"] == "alice"  # the server reads the same binding
    skill = (home / ".claude" / "skills" / "cpersona-memory" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: cpersona-memory\ndescription: ") and 'agent_id="alice"' in skill
    policy = (home / ".claude" / "CLAUDE.md").read_text()
    assert policy.startswith("# My rules\nAlways answer in English.\n") and policy.count(BEGIN) == 1

    before = _snapshot(home)
    again = register(env, "claude-code", "--hooks", "--policy", "--agent-id", "alice")
    assert again.returncode == 0, again.stderr
    assert _snapshot(home) == before  # nothing written, no new backup
    assert "already has the cpersona hooks" in again.stdout


def test_policy_block_is_replaced_never_duplicated(home: Path) -> None:
    env = _env(home)
    assert register(env, "claude-code", "--policy", "--agent-id", "alice").returncode == 0
    with (home / ".claude" / "CLAUDE.md").open("a") as handle:
        handle.write("\nMore of my own rules.\n")
    assert register(env, "claude-code", "--policy", "--agent-id", "carol").returncode == 0
    text = (home / ".claude" / "CLAUDE.md").read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert 'agent_id="carol"' in text and 'agent_id="alice"' not in text
    assert text.startswith("# My rules\n") and text.endswith("More of my own rules.\n")


def test_the_registered_command_fed_the_hosts_json_answers(home: Path) -> None:
    env = _env(home)
    assert register(env, "claude-code", "--hooks", "--agent-id", "alice").returncode == 0
    settings = Settings(db_path=home / "memory.db", embedding_mode="none", update_check=False)
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        memory.store("alice", "The invoice export writes CSV with a semicolon separator.")
    ours = _ours(json.loads((home / ".claude" / "settings.json").read_text()))
    command = ours["UserPromptSubmit"][0]
    hook_env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")} | {"HOME": str(home)}
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(
            claude_input("prompt", prompt="what separator does the invoice export use?")
        ).encode(),
        capture_output=True,
        env=hook_env,
        timeout=60,
    )
    assert done.returncode == 0
    assert "semicolon separator" in (injected(done) or "")
    assert "keyword-only" in (home / ".cpersona" / "hooks.log").read_text()  # no server was running


def test_remove_hooks_takes_out_ours_only(home: Path) -> None:
    env = _env(home)
    assert register(env, "claude-code", "--hooks", "--policy").returncode == 0
    done = register(env, "claude-code", "--remove-hooks")
    assert done.returncode == 0, done.stderr
    assert json.loads((home / ".claude" / "settings.json").read_text())["hooks"] == CLAUDE_SETTINGS["hooks"]
    assert not (home / ".claude" / "skills" / "cpersona-memory" / "SKILL.md").exists()
    assert (home / ".claude" / "CLAUDE.md").read_text() == "# My rules\nAlways answer in English.\n"


def test_codex_server_table_hooks_and_skill(home: Path) -> None:
    env = _env(home)
    codex = home / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        'model = "gpt-5"\n\n[mcp_servers.git]\ncommand = "uvx"\nargs = ["mcp-server-git"]\n'
    )
    done = register(env, "codex", "--hooks", "--policy", "--agent-id", "alice")
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((codex / "config.toml").read_text())
    assert config["model"] == "gpt-5" and config["mcp_servers"]["git"]["command"] == "uvx"
    assert config["mcp_servers"]["cpersona"]["args"] == ["serve"]
    assert config["mcp_servers"]["cpersona"]["env"]["CPERSONA_AGENT_ID"] == "alice"
    hooks = json.loads((codex / "hooks.json").read_text())
    ours = _ours(hooks)
    assert sorted(ours) == ["PreCompact", "SessionStart", "UserPromptSubmit"]
    assert all(" codex " in c[0] for c in ours.values())
    assert (home / ".agents" / "skills" / "cpersona-memory" / "SKILL.md").is_file()
    assert (codex / "AGENTS.md").read_text().count(BEGIN) == 1

    before = _snapshot(home)
    again = register(env, "codex", "--hooks", "--policy", "--agent-id", "alice")
    assert again.returncode == 0, again.stderr
    assert _snapshot(home) == before


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("cursor", "--hooks"), "apply to claude-code and codex only"),
        (("claude-code", "--capture-prompts"), "--capture-prompts goes with --hooks"),
        (("claude-code", "--hooks", "--remove-hooks"), "cannot be combined"),
        (("claude-code", "--hooks", "--agent-id", " "), "--agent-id must be non-empty"),
    ],
)
def test_usage_errors(home: Path, args: tuple[str, ...], said: str) -> None:
    before = _snapshot(home)
    done = register(_env(home), *args)
    assert done.returncode == 2 and said in done.stderr
    assert _snapshot(home) == before


def test_settings_that_are_not_json_are_refused_untouched(home: Path) -> None:
    settings_file = home / ".claude" / "settings.json"
    settings_file.write_text("{ broken")
    done = register(_env(home), "claude-code", "--hooks")
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    assert settings_file.read_text() == "{ broken"
