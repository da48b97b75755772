"""Every benchmark script still starts: its imports resolve against today's package and helpers.

A benchmark is run by hand, weeks apart; a refactor that moves a helper it imports breaks it silently
(benchmarks/self_calibration.py once imported a LoCoMo reader that had moved to ``_locomo_data``). Importing
each script as a module runs its imports and nothing else (each guards its work behind ``__main__``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(
    p for p in [*BENCHMARKS.glob("*.py"), *BENCHMARKS.glob("research/*.py")] if not p.name.startswith("_")
)


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) > 30 and BENCHMARKS / "self_calibration.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_the_script_imports(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(script.parent))
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    name = f"_benchmark_script_{script.stem}"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    if '__name__ == "__main__"' in script.read_text():  # a script, not a helper such as secret_corpus.py
        assert callable(getattr(module, "main", None)), f"{script.name} has no main()"


def test_the_tools_the_scripts_call_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool a benchmark calls by name is still served (recall_path.py once timed a ``stats`` tool that
    had been renamed away, and failed only when run)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from _common import TRIVIAL_TOOL

    from cpersona.server.tools import tool_names

    called = {TRIVIAL_TOOL}
    for script in BENCHMARKS.rglob("*.py"):
        called |= set(re.findall(r'call_tool\(\s*"([a-z_]+)"', script.read_text()))
    assert called >= {"recall", "store", TRIVIAL_TOOL}
    assert called <= set(tool_names())
