"""The console script exits without the interpreter's final collection over the heap, after the command."""

from __future__ import annotations

import gc
import tomllib
from pathlib import Path

import pytest

from cpersona.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]


def test_the_console_script_and_python_m_run_entry() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["cpersona"] == "cpersona.cli.main:entry"
    assert "entry()" in (ROOT / "cpersona" / "__main__.py").read_text()


def test_entry_freezes_the_heap_only_once_the_command_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(cli_main, "main", lambda: events.append("main") or 3)
    monkeypatch.setattr(gc, "freeze", lambda: events.append("freeze"))
    with pytest.raises(SystemExit) as exited:
        cli_main.entry()
    assert exited.value.code == 3  # the command's exit code, unchanged
    assert events == ["main", "freeze"]
