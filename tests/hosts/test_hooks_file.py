"""Merging our hooks into a host's settings: ours replaced, everything else kept, removal clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpersona.hosts.config_file import ConfigFileError
from cpersona.hosts.hooks_file import LAUNCHER, HookBinding, merge_hooks

BINDING = HookBinding("ada", "/data/memory.db", Path("/run/cp/x.hooks.sock"), python="/opt/py")
OTHER = {"type": "command", "command": "~/bin/context.sh"}


def test_ours_go_beside_other_hooks_and_come_out_cleanly() -> None:
    start = {"model": "opus", "hooks": {"UserPromptSubmit": [{"matcher": "", "hooks": [OTHER]}], "Stop": []}}
    added, change = merge_hooks(start, BINDING.entries("claude-code"))
    assert change == "added"
    assert added["hooks"]["UserPromptSubmit"][0] == {"matcher": "", "hooks": [OTHER]}
    assert added["hooks"]["UserPromptSubmit"][1]["hooks"][0]["command"] == (
        f"/opt/py -S {LAUNCHER} claude-code prompt --agent-id ada --db /data/memory.db --socket /run/cp/x.hooks.sock"
    )
    assert merge_hooks(added, BINDING.entries("claude-code")) == (added, "unchanged")
    renamed = HookBinding("bob", BINDING.database, BINDING.socket, python="/opt/py")
    updated, change = merge_hooks(added, renamed.entries("claude-code"))
    assert change == "updated" and "--agent-id bob" in str(updated) and "--agent-id ada" not in str(updated)
    assert merge_hooks(updated, None) == (start, "removed")


def test_our_hook_sharing_a_group_with_another_leaves_the_other(tmp_path: Path) -> None:
    ours = BINDING.entries("codex")["UserPromptSubmit"]["hooks"][0]
    start = {"hooks": {"UserPromptSubmit": [{"hooks": [OTHER, ours]}]}}
    removed, change = merge_hooks(start, None)
    assert change == "removed" and removed == {"hooks": {"UserPromptSubmit": [{"hooks": [OTHER]}]}}


def test_hooks_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ConfigFileError, match='"hooks" is not an object'):
        merge_hooks({"hooks": []}, BINDING.entries("claude-code"))


def test_capture_goes_on_the_prompt_hook_only() -> None:
    capturing = HookBinding("ada", "/db", Path("/s"), capture_prompts=True, python="/opt/py")
    assert "--capture-prompts" in capturing.command("claude-code", "prompt")
    assert "--capture-prompts" not in capturing.command("claude-code", "session-start")
