"""The health page offers `cpersona checkup --fix` only when a finding is one --fix can repair (a missing
model is not), and says how many: a real store, real checks, damage made with the health tests' helpers."""

from __future__ import annotations

from health_damage import damage_rows, location, seed

from cpersona.memory import Memory
from cpersona.ui import insight


def _page(memory: Memory) -> str:
    return insight.health_page(memory.check_health(), memory.stats(), memory.memory_timeline())


def test_no_fix_is_offered_when_nothing_is_fixable(memory: Memory) -> None:
    memory.store("ana", "the staging database moved to port 5433")
    health = memory.check_health()
    assert not any(f.get("fixable") for f in health["findings"])
    assert 'data-testid="fix-hint"' not in _page(memory)
    assert "checkup --fix" not in _page(memory)


def test_fixable_findings_are_counted_in_the_hint(memory: Memory) -> None:
    target = location(memory)
    seed(target, "victim")
    damage_rows(target, "victim")
    fixable = [f for f in memory.check_health()["findings"] if f.get("fixable")]
    assert fixable
    page = _page(memory)
    assert (
        f'data-testid="fix-hint">Run <code>cpersona checkup --fix</code> to repair the {len(fixable)} '
        "finding(s) it can fix." in page
    )
