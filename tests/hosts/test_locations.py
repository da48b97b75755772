"""Each host's config file, per operating system."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpersona.hosts.locations import HOSTS, UnknownHost, config_path

HOME = Path("/home/ada")


@pytest.mark.parametrize(
    ("system", "env", "expected"),
    [
        ("Darwin", {}, HOME / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"),
        ("Linux", {}, HOME / ".config" / "Claude" / "claude_desktop_config.json"),
        ("Linux", {"XDG_CONFIG_HOME": "/cfg"}, Path("/cfg/Claude/claude_desktop_config.json")),
        (
            "Linux",
            {"XDG_CONFIG_HOME": "relative"},
            HOME / ".config" / "Claude" / "claude_desktop_config.json",
        ),
        ("Windows", {"APPDATA": "/appdata"}, Path("/appdata/Claude/claude_desktop_config.json")),
        ("Windows", {}, HOME / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"),
    ],
)
def test_claude_desktop_per_os(system: str, env: dict[str, str], expected: Path) -> None:
    assert config_path("claude-desktop", system=system, env=env, home=HOME) == expected


def test_the_other_hosts(tmp_path: Path) -> None:
    assert config_path("claude-code", home=HOME) == HOME / ".claude.json"
    assert config_path("cursor", home=HOME, project_dir=tmp_path) == HOME / ".cursor" / "mcp.json"
    assert (
        config_path("cursor", home=HOME, project_dir=tmp_path, project=True)
        == tmp_path / ".cursor" / "mcp.json"
    )
    assert config_path("mcp-json", home=HOME, project_dir=tmp_path) == tmp_path / ".mcp.json"
    assert config_path("codex", home=HOME) == HOME / ".codex" / "config.toml"
    assert set(HOSTS) == {"claude-code", "claude-desktop", "cursor", "mcp-json", "codex"}
    with pytest.raises(UnknownHost, match="known hosts: claude-code"):
        config_path("vscode")
