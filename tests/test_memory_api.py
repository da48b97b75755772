"""Memory's methods are the ``@public`` service methods, bound by generated lines that stay in step."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from typing import Any

from cpersona import memory as memory_module
from cpersona import result_types
from cpersona.core.public import annotated_results, public, public_methods
from cpersona.memory import SERVICES, Memory, method_results

ROOT = Path(__file__).resolve().parents[1]

#: Memory's public methods before the binding was generated: CLI, tests and benchmarks call them all.
KNOWN_METHODS = {
    "close", "wait_until_ready", "drain_queue", "store", "recall", "recall_with_context", "get_contents",
    "archive_episode", "update_memory", "get_profile", "update_profile", "list_memories", "list_episodes",
    "list_agents", "agent_notice", "browse_memories", "browse_episodes", "list_profiles", "memory_timeline",
    "resource_templates", "list_resources", "read_resource", "complete_agent_id", "complete_project_id",
    "lock_memory", "unlock_memory", "delete_memory", "delete_episode", "delete_agent_data",
    "get_queue_status", "embedding_status", "stats", "reembed", "check_health", "deep_check",
    "calibrate_threshold", "set_recall_precision", "get_recall_precision", "calibrate",
    "export_memories", "import_memories", "merge_memories", "migrate_channel_axis",
}  # fmt: skip


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_memory_api", ROOT / "scripts" / "gen_memory_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_binding_lines_are_generated_from_the_marked_methods() -> None:
    generator = _generator()
    text = Path(memory_module.__file__).read_text(encoding="utf-8")
    assert generator.render(text) == text, "cpersona/memory.py is stale: run python scripts/gen_memory_api.py"


def test_memory_keeps_every_method_with_the_service_signature_and_docstring() -> None:
    own = {name for name, _ in inspect.getmembers(Memory, inspect.isfunction) if not name.startswith("_")}
    # The methods Memory had before the @public binding all stay; new tools add methods freely.
    assert own >= KNOWN_METHODS, f"Memory lost methods: {sorted(KNOWN_METHODS - own)}"
    bound = 0
    for service in SERVICES.values():
        for name, method in public_methods(service):
            function = getattr(service, method)
            exposed = getattr(Memory, name)
            assert exposed.__doc__ == function.__doc__ and exposed.__doc__, name
            assert (
                list(inspect.signature(exposed).parameters)[1:]
                == list(inspect.signature(function).parameters)[1:]
            ), name
            bound += 1
    assert bound == len(own) - 2  # close and wait_until_ready are Memory's own


def test_a_marked_method_is_found_under_its_public_name() -> None:
    class Service:
        @public
        def one(self) -> int:
            return 1

        @public(name="renamed")
        def two(self) -> int:
            return 2

        def hidden(self) -> int:
            return 3

    assert public_methods(Service) == [("one", "one"), ("renamed", "two")]


def test_result_shapes_come_from_the_return_annotation_when_it_names_them() -> None:
    def single() -> result_types.LockResult:
        raise NotImplementedError

    def several() -> result_types.StoreStored | result_types.StoreSkipped:
        raise NotImplementedError

    def plain() -> dict[str, Any]:
        raise NotImplementedError

    def sentence() -> str | None:
        raise NotImplementedError

    assert annotated_results(single) == (result_types.LockResult,)
    assert annotated_results(several) == (result_types.StoreStored, result_types.StoreSkipped)
    assert annotated_results(plain) == annotated_results(sentence) == ()


def test_declared_results_only_fill_in_for_unannotated_methods() -> None:
    # A method whose annotation names its shapes must not be declared again (two places would drift).
    marked = {name: getattr(s, m) for s in SERVICES.values() for name, m in public_methods(s)}
    assert set(result_types.DECLARED_RESULTS) <= set(marked)
    twice = [name for name in result_types.DECLARED_RESULTS if annotated_results(marked[name])]
    assert twice == [], f"drop these from result_types.DECLARED_RESULTS, their annotations say it: {twice}"
    assert set(method_results()) == {name for name in marked if name not in {"drain_queue", "agent_notice"}}
