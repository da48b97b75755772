"""cpersona.core.atomic: the target is the old file or the whole new one, never half of either."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from cpersona.core.atomic import atomic_text, write_json


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".partial"))


def test_write_json_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "side.json"
    write_json(target, {"b": 1, "a": "ü"})
    assert target.read_text(encoding="utf-8") == '{\n  "a": "ü",\n  "b": 1\n}\n'
    write_json(target, {"c": 2})
    assert json.loads(target.read_text(encoding="utf-8")) == {"c": 2}
    assert leftovers(target.parent) == []
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # private unless a mode is asked for
    write_json(target, {"c": 3}, mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_failure_mid_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_text(target) as out:
        out.write("new line 1\n")
        raise RuntimeError("disk went away")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert leftovers(tmp_path) == []


def test_an_unserialisable_value_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    with pytest.raises(TypeError):
        write_json(target, {"when": object()})
    assert not target.exists() and leftovers(tmp_path) == []
