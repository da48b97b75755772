"""cpersona.shapes describes what Memory really returns, and docs/api-shapes.md is generated from it."""

from __future__ import annotations

import importlib.util
import inspect
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from cpersona import shapes
from cpersona.config import Settings
from cpersona.errors import Rejected
from cpersona.memory import Memory
from cpersona.server.output_schemas import output_schema
from cpersona.server.schemas import TOOLS_BY_NAME

ROOT = Path(__file__).resolve().parents[1]
#: Memory's public methods that do not return a result dict (agent_notice: a sentence or None).
NOT_RESULTS = {"close", "wait_until_ready", "drain_queue", "agent_notice"}


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_api_shapes", ROOT / "scripts" / "gen_api_shapes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems(value: Any, tp: Any, where: str = "result") -> list[str]:
    """Where ``value`` departs from the type ``tp`` (TypedDicts checked key by key, recursively)."""
    origin = get_origin(tp)
    if origin in (NotRequired, Required, typing.Annotated):
        return problems(value, get_args(tp)[0], where)
    if tp is Any:
        return []
    if tp is type(None) or tp is None:
        return [] if value is None else [f"{where}: expected None, got {value!r:.60}"]
    if isinstance(tp, type) and typing.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: expected {tp.__name__} object, got {type(value).__name__}"]
        hints = get_type_hints(tp, include_extras=True)
        required = tp.__required_keys__
        found = [f"{where}: missing key {k!r} of {tp.__name__}" for k in required if k not in value]
        found += [f"{where}: key {k!r} not in {tp.__name__}" for k in value if k not in hints]
        for key, sub in hints.items():
            if key in value:
                found += problems(value[key], sub, f"{where}.{key}")
        return found
    if origin in (types.UnionType, typing.Union):
        options = [problems(value, arg, where) for arg in get_args(tp)]
        return [] if any(not p for p in options) else min(options, key=len)
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{where}: {value!r:.60} not one of {get_args(tp)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [p for i, item in enumerate(value) for p in problems(item, get_args(tp)[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        key_type, value_type = get_args(tp)
        return [
            p
            for k, v in value.items()
            for p in problems(k, key_type, where) + problems(v, value_type, f"{where}.{k}")
        ]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected a number, got {value!r:.60}"]
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected an integer, got {value!r:.60}"]
    return [] if isinstance(value, tp) else [f"{where}: expected {tp.__name__}, got {value!r:.60}"]


def assert_shape(method: str, value: Any, expected: type | None = None) -> None:
    """``value`` is one of the shapes METHOD_RESULTS lists for ``method`` (``expected`` when given)."""
    candidates = (expected,) if expected is not None else shapes.METHOD_RESULTS[method]
    assert expected is None or expected in shapes.METHOD_RESULTS[method]
    found = [problems(value, shape, method) for shape in candidates]
    assert any(not p for p in found), min(found, key=len)
    if method in TOOLS_BY_NAME:  # the generated outputSchema accepts what the shapes accept
        error = best_match(Draft202012Validator(output_schema(method)).iter_errors(value))
        assert error is None, (method, list(error.absolute_path), error.message[:300])


def test_the_checker_notices_missing_unknown_and_mistyped_keys() -> None:
    good = {"ok": True, "id": 1, "ref": "mem:1", "locked": False}
    assert problems(good, shapes.LockResult) == []
    assert problems({k: v for k, v in good.items() if k != "id"}, shapes.LockResult)
    assert problems({**good, "extra": 1}, shapes.LockResult)
    assert problems({**good, "id": True}, shapes.LockResult)
    assert problems({**good, "ok": False}, shapes.LockResult)


def test_every_public_memory_method_has_a_result_shape() -> None:
    public = {name for name, _ in inspect.getmembers(Memory, inspect.isfunction) if not name.startswith("_")}
    assert public - NOT_RESULTS == set(shapes.METHOD_RESULTS)


def test_api_shapes_doc_is_generated_from_the_typeddicts() -> None:
    generator = _load_generator()
    current = (ROOT / "docs" / "api-shapes.md").read_text(encoding="utf-8")
    assert generator.BEGIN in current, "docs/api-shapes.md lost its generated section"
    stale = "docs/api-shapes.md is stale: run python scripts/gen_api_shapes.py"
    assert generator.render(current) == current, stale
    for shape in {s for results in shapes.METHOD_RESULTS.values() for s in results} | set(shapes.ROW_SHAPES):
        for key in get_type_hints(shape):
            assert f"`{key}`" in current, f"{shape.__name__}.{key} is not in docs/api-shapes.md"


def test_keyword_only_results_match_their_shapes(memory: Memory) -> None:
    stored = memory.store("a", "Deploy key for staging lives in vault", msg_id="m1", source={"id": "u1"})
    assert_shape("store", stored, shapes.StoreStored)
    assert_shape("store", memory.store("a", "other text", msg_id="m1"), shapes.StoreSkipped)
    with pytest.raises(
        Rejected
    ) as refused:  # refusals raise; the MCP layer adds result/reason from details()
        memory.store("a", "   ")
    assert refused.value.details() == {"result": "rejected", "reason": "content is empty"}
    long = memory.store("a", "y" * (memory.settings.max_content_length + 5))
    assert_shape("store", long, shapes.StoreStored)
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
        assert_shape("store", memory.store("a", "The cat sits on the mat"), shapes.StoreStored)
        memory.archive_episode("a", "A session about pets")
        recalled = memory.recall("a", "a kitten on a rug")
        assert_shape("recall", recalled)
        assert "cosine" in recalled["results"][-1]["match_reason"] and "advisory" not in recalled
        status = memory.embedding_status()
        assert_shape("embedding_status", status)
        assert status["state"] == "healthy" and "model_id" in status
        assert_shape("stats", memory.stats())
        assert_shape("reembed", memory.reembed(), shapes.ReembedDone)
