"""Each health finding says whether fix=true repairs it, and the claim holds on a real damaged file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from health_damage import CAP, connect, damage_file, damage_rows, insert_memory, location, seed

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.health.checks import REGISTRY, HealthContext, run_checks
from cpersona.memory import Memory
from cpersona.runtime.health_state import FAULT, Condition
from cpersona.storage import open_store


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        max_content_length=CAP,
        operating_context_path=tmp_path / "operating-context.toml",
    )
    with Memory(settings, backend=NoEmbeddings()) as memory:
        memory.wait_until_ready(5)
        yield memory


def test_the_registry_says_which_checks_repair() -> None:
    assert REGISTRY["duplicates"].fixable and REGISTRY["fts"].fixable and REGISTRY["tasks"].fixable
    assert not REGISTRY["embedding"].fixable  # fix=true cannot install or select a model
    assert not REGISTRY["empty_content"].fixable and not REGISTRY["integrity"].fixable


def test_what_is_marked_fixable_is_what_fix_repairs(mem: Memory) -> None:
    path = location(mem)
    seed(path, "victim")
    damage_rows(path, "victim")
    damage_file(path, "victim")
    with connect(path) as raw:
        insert_memory(raw, "victim", "")  # report-only damage: a person decides what to do with it
    report = mem.check_health()
    assert all(isinstance(f["fixable"], bool) for f in report["findings"])
    fixable = {f["check"] for f in report["findings"] if f["fixable"]}
    assert fixable >= {"schema", "duplicates", "oversized", "invalid_json", "timestamps", "tasks", "fts"}
    # Report-only findings are not offered to --fix: empty rows, keyword-only vectors (info).
    report_only = [f for f in report["findings"] if f["check"] in {"vectors", "empty_content"}]
    assert {f["check"] for f in report_only} == {"vectors", "empty_content"}
    assert all(not f["fixable"] for f in report_only)

    after = mem.check_health(fix=True)
    # Nothing that was marked fixable is left; whatever is left was marked not fixable.
    assert not [f for f in after["findings"] if f["check"] in fixable and f["fixable"]], after["findings"]
    assert all(not f["fixable"] for f in after["findings"])


def test_a_model_fault_is_critical_and_not_fixable(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "m.db", embedding_mode="none", update_check=False)
    with Memory(settings, backend=NoEmbeddings(), start_background=False):
        pass  # creates the file
    store = open_store(settings.db_path)
    try:
        ctx = HealthContext(
            store=store,
            settings=settings,
            agent_id=None,
            fix=False,
            embedding_mode="onnx",
            condition=Condition(
                FAULT, "model_missing", "model jina-v5-nano is not installed", "e", "install it"
            ),
        )
        result = run_checks(ctx, ["embedding"])
    finally:
        store.close()
    (finding,) = result["findings"]
    assert (
        finding["severity"] == "critical" and finding["fixable"] is False and finding["fix"] == "install it"
    )
