"""cpersona.result_types describes what Memory really returns, and docs/api-shapes.md is generated from it."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from cpersona import result_types
from cpersona.config import Settings
from cpersona.errors import Rejected
from cpersona.memory import Memory, method_results
from cpersona.server.output_schemas import output_schema, results_schema
from cpersona.server.tools import TOOLS_BY_NAME

ROOT = Path(__file__).resolve().parents[1]
#: Memory's public methods that do not return a result dict (agent_notice: a sentence or None).
NOT_RESULTS = {"close", "wait_until_ready", "drain_queue", "agent_notice"}


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_api_shapes", ROOT / "scripts" / "gen_api_shapes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def closed_schema(method: str, shapes_wanted: tuple[type, ...]) -> dict[str, Any]:
    """``method``'s generated outputSchema (cpersona/server/output_schemas.py), answering only
    ``shapes_wanted`` and closed: the API's own dicts carry no key their shape does not declare
    (the wire schema stays open for the MCP layer's additions) and only string keys."""
    schema = copy.deepcopy(results_schema(shapes_wanted))
    for definition in schema["$defs"].values():
        if definition.get("type") == "object" and "properties" in definition:
            definition["additionalProperties"] = False
    for node in _subschemas(schema):
        if node.get("type") == "object":
            node["propertyNames"] = {"type": "string"}
    schema["anyOf"] = [{"$ref": f"#/$defs/{shape.__name__}"} for shape in shapes_wanted]
    return schema


def _subschemas(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in _subschemas(item)]
    if not isinstance(node, dict):
        return []
    return [node, *(found for value in node.values() for found in _subschemas(value))]


def problems(method: str, value: Any, shapes_wanted: tuple[type, ...]) -> list[str]:
    """Where ``value`` departs from every one of ``shapes_wanted`` (empty: it matches one)."""
    validator = Draft202012Validator(closed_schema(method, shapes_wanted))
    errors = sorted(validator.iter_errors(value), key=lambda e: str(list(e.absolute_path)))
    found: list[str] = []
    for error in errors:
        # anyOf reports "matches none"; its branch errors name the key and what is wrong with it.
        for leaf in error.context or [error]:
            found.append(f"{method}{''.join(f'[{p!r}]' for p in leaf.absolute_path)}: {leaf.message[:200]}")
    return found


def assert_shape(method: str, value: Any, expected: type | None = None) -> None:
    """``value`` is one of the shapes method_results() lists for ``method`` (``expected`` when given)."""
    assert expected is None or expected in method_results()[method]
    found = problems(method, value, (expected,) if expected is not None else method_results()[method])
    assert found == [], found
    if method in TOOLS_BY_NAME:  # the open wire schema accepts it too
        error = best_match(Draft202012Validator(output_schema(method)).iter_errors(value))
        assert error is None, (method, list(error.absolute_path), error.message[:300])


def test_the_checker_notices_missing_unknown_and_mistyped_keys() -> None:
    good = {"ok": True, "id": 1, "ref": "mem:1", "locked": False}
    lock = (result_types.LockResult,)
    assert problems("lock_memory", good, lock) == []
    assert problems("lock_memory", {k: v for k, v in good.items() if k != "id"}, lock)
    assert problems("lock_memory", {**good, "extra": 1}, lock)
    assert problems("lock_memory", {**good, "id": True}, lock)
    assert problems("lock_memory", {**good, "ok": False}, lock)
    assert problems("lock_memory", {**good, "ref": None}, lock)
    # Nested shapes are closed too, and dict keys are strings.
    deleted = {"ok": True, "agent_id": "a", "deleted": {"memories": 1, "episodes": 0, "profiles": 0}}
    result = (result_types.DeleteAgentDataResult,)
    assert problems("delete_agent_data", {**deleted, "calibration_discarded": False}, result) == []
    nested_extra = {**deleted, "calibration_discarded": False, "deleted": {**deleted["deleted"], "x": 1}}
    assert problems("delete_agent_data", nested_extra, result)
    status = {"state": "healthy", "mode": "none"}
    assert problems("embedding_status", status, (result_types.EmbeddingStatus,)) == []
    window = {"size": None, "rows_outside": {1: {"memories": 2}}}
    stats_like = {"vector_window": window}
    assert any("rows_outside" in p for p in problems("stats", stats_like, (result_types.StatsResult,)))
    # A value of the wrong scalar type inside a list of rows is found.
    listing = {"ok": True, "items": [], "count": 0, "total": 0}
    assert problems("list_memories", listing, (result_types.ListMemoriesResult,)) == []
    assert problems("list_memories", {**listing, "items": [{"id": 1}]}, (result_types.ListMemoriesResult,))


def test_every_public_memory_method_has_a_result_shape() -> None:
    public = {name for name, _ in inspect.getmembers(Memory, inspect.isfunction) if not name.startswith("_")}
    assert public - NOT_RESULTS == set(method_results())


def test_each_memory_method_is_annotated_with_the_shapes_it_answers() -> None:
    # mypy checks a method's body against its return annotation; the registry (and the docs, and
    # outputSchema) must name the same shapes, or the checked type is not the documented one.
    differ = {}
    for name, registered in method_results().items():
        returned = get_type_hints(getattr(Memory, name))["return"]
        union = get_origin(returned) in (types.UnionType, Union)
        members = set(get_args(returned)) if union else {returned}
        if members != set(registered):
            differ[name] = (sorted(map(str, members)), sorted(t.__name__ for t in registered))
    assert differ == {}


def test_api_shapes_doc_is_generated_from_the_typeddicts() -> None:
    generator = _load_generator()
    current = (ROOT / "docs" / "api-shapes.md").read_text(encoding="utf-8")
    assert generator.BEGIN in current, "docs/api-shapes.md lost its generated section"
    stale = "docs/api-shapes.md is stale: run python scripts/gen_api_shapes.py"
    assert generator.render(current) == current, stale
    for shape in {s for results in method_results().values() for s in results} | set(result_types.ROW_SHAPES):
        for key in get_type_hints(shape):
            assert f"`{key}`" in current, f"{shape.__name__}.{key} is not in docs/api-shapes.md"


def test_keyword_only_results_match_their_shapes(memory: Memory) -> None:
    stored = memory.store("a", "Deploy key for staging lives in vault", msg_id="m1", source={"id": "u1"})
    assert_shape("store", stored, result_types.StoreStored)
    assert_shape("store", memory.store("a", "other text", msg_id="m1"), result_types.StoreSkipped)
    with pytest.raises(
        Rejected
    ) as refused:  # refusals raise; the MCP layer adds result/reason from details()
        memory.store("a", "   ")
    assert refused.value.details() == {"result": "rejected", "reason": "content is empty"}
    long = memory.store("a", "y" * (memory.settings.max_content_length + 5))
    assert_shape("store", long, result_types.StoreStored)
    assert long["truncated"] is True
    for i in range(50):  # enough rows for profile injection
        memory.store("a", f"filler note number {i} about kestrel migrations")
    assert_shape("update_profile", memory.update_profile("a", "p" * (memory.settings.max_profile_length + 1)))
    assert_shape("get_profile", memory.get_profile("a"))
    assert_shape("get_profile", memory.get_profile("nobody"))

    episode = memory.archive_episode(
        "a",
        "Staging deploy session",
        keywords="deploy, vault",
        history=[{"role": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00Z"}],
    )
    assert_shape("archive_episode", episode)
    recalled = memory.recall("a", "deploy vault kestrel", limit=100)
    assert_shape("recall", recalled)
    kinds = {row["type"] for row in recalled["results"]}
    assert kinds == {"memory", "episode", "profile"} and "advisory" in recalled
    assert_shape("recall", memory.recall("a", ""))
    assert_shape("recall", memory.recall("a", "deploy", limit=0))
    assert_shape(
        "recall", memory.recall("a", "deploy vault", time_cue={"phrase": "today", "certainty": "sure"})
    )
    cued = memory.recall("a", "deploy vault kestrel today", limit=1, trace=True)  # the query's phrase
    assert_shape("recall", cued)
    assert cued["time_cue"]["origin"] == "query" and "time_cue" in cued["trace"]
    merged = memory.recall_with_context(
        "a",
        "deploy vault",
        [
            {"role": "user", "content": "what about staging?", "name": "Ana"},
            {"role": "system", "content": "x"},
        ],
        limit=100,
    )
    assert_shape("recall_with_context", merged)
    assert_shape(
        "recall_with_context",
        memory.recall_with_context("a", "deploy", [], time_cue={"start": "2026-01-01", "certainty": "vague"}),
    )
    assert {item["origin"] for item in merged["items"]} == {"memory", "context"}
    assert merged["context_filter_only"] == ["system"]
    contents = memory.get_contents("a", [stored["ref"], episode["ref"], "mem:999999"])
    assert_shape("get_contents", contents)
    assert contents["missing"] == ["mem:999999"] and len(contents["items"]) == 2

    assert_shape("update_memory", memory.update_memory(stored["id"], "Deploy key moved", agent_id="a"))
    assert_shape("lock_memory", memory.lock_memory(stored["id"], agent_id="a"))
    assert_shape("unlock_memory", memory.unlock_memory(stored["id"], agent_id="a"))
    assert_shape("list_memories", memory.list_memories("a", limit=5))
    assert_shape("list_episodes", memory.list_episodes("a"))
    assert_shape("list_agents", memory.list_agents())
    assert_shape(
        "browse_memories", memory.browse_memories("a", locked=False, embedded=False, offset=1, limit=3)
    )
    assert_shape("browse_episodes", memory.browse_episodes("a"))
    assert_shape("list_profiles", memory.list_profiles("a"))
    assert_shape("memory_timeline", memory.memory_timeline("a"))
    assert_shape("resource_templates", memory.resource_templates())
    assert_shape("list_resources", memory.list_resources())
    assert_shape("read_resource", memory.read_resource("cpersona://agents/a/memories"))
    assert_shape("complete_agent_id", memory.complete_agent_id("a"))
    assert_shape("complete_project_id", memory.complete_project_id("", agent_id="a"))
    assert_shape("get_queue_status", memory.get_queue_status())
    assert_shape("embedding_status", memory.embedding_status())
    assert_shape("stats", memory.stats())
    assert_shape("delete_memory", memory.delete_memory(stored["id"], agent_id="a"))
    assert_shape("delete_episode", memory.delete_episode(episode["id"], agent_id="a"))
    assert_shape("delete_agent_data", memory.delete_agent_data("a"))


@pytest.mark.slow
def test_embedded_results_match_their_shapes(tmp_path: Path, minilm_models_dir: Path) -> None:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        embedding_mode="onnx",
        models_dir=minilm_models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
    )
    with Memory(settings) as memory:
        assert memory.wait_until_ready(60)
        assert_shape("store", memory.store("a", "The cat sits on the mat"), result_types.StoreStored)
        memory.archive_episode("a", "A session about pets")
        recalled = memory.recall("a", "a kitten on a rug")
        assert_shape("recall", recalled)
        assert "cosine" in recalled["results"][-1]["match_reason"] and "advisory" not in recalled
        status = memory.embedding_status()
        assert_shape("embedding_status", status)
        assert status["state"] == "healthy" and "model_id" in status
        assert_shape("stats", memory.stats())
        assert_shape("reembed", memory.reembed(), result_types.ReembedDone)


def test_gate_records_without_a_gate_match_the_shape_and_its_level_rule(memory: Memory) -> None:
    # RecallGate documents level/β as null where no gate applies (disabled, empty query, limit 0) and the
    # agent's own where a keyword-only recall reports kind 'off'; all are one closed RecallGate.
    memory.store("a", "kestrel migration notes")
    precision = memory.settings.recall_precision
    keyword_only = memory.recall("a", "kestrel")["gate"]
    assert (keyword_only["kind"], keyword_only["level"]) == ("off", precision)
    assert keyword_only["beta"] is not None
    for reply in (memory.recall("a", ""), memory.recall("a", "kestrel", limit=0)):
        assert_shape("recall", reply)
        assert reply["gate"]["kind"] == "off" and reply["gate"]["level"] is None
        assert reply["gate"]["beta"] is None and reply["gate"]["passed"] is True
    assert problems(
        "recall", {**memory.recall("a", ""), "gate": {"kind": "off"}}, (result_types.RecallResult,)
    )
