"""The README stays true: its tables are whole and complete, and its Python example runs."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cpersona.cli.main import build_parser, command_names
from cpersona.server.tools import tool_names

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else len(README)]


def table(title: str) -> list[str]:
    """The rows of the first table in a section; a blank line inside it would end it (and break it on GitHub)."""
    lines = section(title).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[first + 2 :]:  # after the header and the |---| line
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_tools_table_has_one_row_per_tool_and_no_other() -> None:
    named = [n for row in table("Tools") for n in re.findall(r"`([a-z_]+)`", row.split("|")[1])]
    assert sorted(named) == sorted(tool_names())


def test_the_tools_table_is_generated_from_the_declarations() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_readme_tools", ROOT / "scripts" / "gen_readme_tools.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    stale = "README.md's tools table is stale: run python scripts/gen_readme_tools.py"
    assert generator.render(README) == README, stale


def test_the_command_table_lists_every_command() -> None:
    named = {
        m for row in table("Command line") for m in re.findall(r"`cpersona ([a-z-]+)", row.split("|")[1])
    }
    assert named == set(command_names(build_parser()))


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = re.search(r"```python\n(.*?)```", section("Python API"), flags=re.DOTALL)
    assert code is not None
    for key in (
        "CPERSONA_DB_PATH",
        "CPERSONA_EMBEDDING_MODE",
        "CPERSONA_UPDATE_CHECK",
        "CPERSONA_AUTO_FETCH_MODEL",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CPERSONA_DB_PATH", str(tmp_path / "memory.db"))
    monkeypatch.setenv("CPERSONA_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("CPERSONA_EMBEDDING_MODE", "none")
    monkeypatch.setenv("CPERSONA_UPDATE_CHECK", "false")
    namespace: dict[str, object] = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)  # noqa: S102 - our own README
    best = namespace["best"]
    assert isinstance(best, dict) and "5433" in best["content"]


def test_import_cpersona_stays_light_and_memory_is_served_lazily() -> None:
    probe = (
        "import sys, cpersona; heavy = [m for m in ('numpy', 'onnxruntime', 'cpersona.memory', 'cpersona.storage') "
        "if m in sys.modules]; assert heavy == [], heavy; "
        "from cpersona import Memory, Settings; import cpersona.memory, cpersona.config; "
        "assert Memory is cpersona.memory.Memory and Settings is cpersona.config.Settings; "
        "assert 'Memory' in dir(cpersona); "
        "print(cpersona.__version__)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        import cpersona

        cpersona.nothing_here  # noqa: B018
