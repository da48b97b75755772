"""The degradation state machine and the recall advisory, with faults provoked for real."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.install.fetch import install_from
from cpersona.embed.runtime.base import FaultKind
from cpersona.embed.runtime.embed_server import start_embed_server
from cpersona.embed.runtime.http_backend import HttpBackend
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.runtime.health_state import FAULT, HEALTHY, HINT, Condition, HealthState


def test_full_advisory_once_per_outage_then_reminders_and_rearm() -> None:
    health = HealthState()
    health.set(Condition(FAULT, "model_missing", "gone", "no dir", "fetch it"))
    first, second = health.advisory(), health.advisory()
    assert first is not None and first["full"] is True and first["runbook"] == "fetch it"
    assert second is not None and second["full"] is False and "runbook" not in second
    health.set(Condition(HEALTHY))
    assert health.advisory() is None
    health.set(Condition(FAULT, "model_missing", "gone", "no dir", "fetch it"))
    assert health.advisory()["full"] is True


def test_opt_out_removes_the_advisory() -> None:
    health = HealthState(advisory_enabled=False)
    health.set(Condition(HINT, "embeddings_off", "off", "mode none", "turn on"))
    assert health.advisory() is None


def test_mode_none_is_a_hint(memory: Memory) -> None:
    memory.store("a", "keyword only row")
    out = memory.recall("a", "keyword")
    assert out["advisory"]["state"] == "hint" and out["advisory"]["severity"] == "info"
    assert out["count"] == 1


@pytest.mark.slow
def test_missing_model_is_a_fault_naming_the_fetch_command_and_recovery_rearms(
    tmp_path: Path, minilm_source_dir: Path
) -> None:
    models = tmp_path / "models"
    settings = Settings(
        db_path=tmp_path / "m.db",
        embedding_mode="onnx",
        models_dir=models,
        embedding_model="all-minilm-l6-v2",
    )
    mem = Memory(settings, start_background=False)
    try:
        assert not mem.embeddings.try_load()
        stored = mem.store("a", "The cat sits on the mat")
        assert stored["embedded"] is False
        out = mem.recall("a", "cat")
        advisory = out["advisory"]
        assert advisory["state"] == "fault" and advisory["kind"] == FaultKind.MODEL_MISSING
        assert "cpersona fetch-model all-minilm-l6-v2" in advisory["runbook"]
        assert out["count"] == 1  # keyword-only still answers
        assert mem.recall("a", "cat")["advisory"]["full"] is False

        install_from(minilm_source_dir, "all-minilm-l6-v2", models, stream=sys.stderr)
        assert mem.embeddings.try_load()
        mem.drain_queue()
        healthy = mem.recall("a", "A kitten is resting on a rug")
        assert "advisory" not in healthy and healthy["results"][-1]["embedded"] is True

        # A loaded session keeps working if its files vanish; a fresh process then faults again.
        shutil.rmtree(models / "all-minilm-l6-v2")
        assert mem.recall("a", "kitten")["results"][-1]["embedded"] is True
    finally:
        mem.close()
    with Memory(settings, start_background=False) as again:
        assert not again.embeddings.try_load()
        assert again.recall("a", "cat")["advisory"]["full"] is True


@pytest.mark.slow
def test_corrupt_model_bytes_are_a_fault(tmp_path: Path, minilm_source_dir: Path) -> None:
    models = tmp_path / "models"
    install_from(minilm_source_dir, "all-minilm-l6-v2", models, stream=sys.stderr)
    onnx_file = models / "all-minilm-l6-v2" / "onnx" / "model.onnx"
    data = bytearray(onnx_file.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64
    onnx_file.write_bytes(bytes(data))
    settings = Settings(
        db_path=tmp_path / "m.db",
        embedding_mode="onnx",
        models_dir=models,
        embedding_model="all-minilm-l6-v2",
    )
    with Memory(settings, start_background=False) as mem:
        assert not mem.embeddings.try_load()
        advisory = mem.recall("a", "anything")["advisory"]
        assert advisory["state"] == "fault"
        assert advisory["kind"] in (FaultKind.HASH_MISMATCH, FaultKind.CORRUPT_MODEL, FaultKind.SESSION_ERROR)
        assert advisory["evidence"]


@pytest.mark.slow
def test_two_inference_errors_fault_and_unreachable_endpoint(tmp_path: Path, minilm_backend) -> None:
    server, _thread = start_embed_server(minilm_backend)
    backend = HttpBackend(server.url + "/embed", timeout=5)
    settings = Settings(db_path=tmp_path / "m.db", embedding_mode="http", embedding_url=server.url + "/embed")
    mem = Memory(settings, backend=backend, start_background=False)
    try:
        assert mem.embeddings.try_load()
        assert mem.store("a", "served over http")["embedded"] is True
        server.shutdown()
        server.server_close()
        assert mem.store("a", "first failure")["embedded"] is False
        assert mem.health.state == HEALTHY  # one error is not yet a fault
        assert mem.store("a", "second failure")["embedded"] is False
        advisory = mem.recall("a", "failure")["advisory"]
        assert advisory["kind"] == FaultKind.INFERENCE_ERROR
        assert mem.recall("a", "failure")["count"] == 2
        assert not mem.embeddings.try_load()
        assert mem.health.condition.kind == FaultKind.ENDPOINT_UNREACHABLE
    finally:
        mem.close()


@pytest.mark.slow
def test_dimension_drift_of_an_unknown_model_is_a_fault_and_reembed_repairs_it(
    tmp_path: Path, minilm_backend
) -> None:
    """An HTTP endpoint that changed its model under the same name: most of the corpus is another width.

    The registry cannot vouch for an ``http:`` model's dimension, so a corpus mostly at
    another dimension is the operator's call (a fault naming `cpersona reembed`).
    """
    server, _thread = start_embed_server(minilm_backend)
    settings = Settings(db_path=tmp_path / "m.db", embedding_mode="http", embedding_url=server.url + "/embed")
    try:
        with Memory(
            settings, backend=HttpBackend(server.url + "/embed", timeout=5), start_background=False
        ) as mem:
            assert mem.embeddings.try_load()
            mem.store("a", "The cat sits on the mat")
            mem.store("a", "Quarterly revenue grew")
            # A corpus written by a same-named model of another width.
            mem.storage.db.connection().execute("UPDATE memories SET embedding_dim = 768")
        with Memory(
            settings, backend=HttpBackend(server.url + "/embed", timeout=5), start_background=False
        ) as mem:
            assert not mem.embeddings.try_load()
            assert mem.health.condition.kind == FaultKind.DIMENSION_MISMATCH
            assert "cpersona reembed" in mem.recall("a", "cat")["advisory"]["runbook"]
            out = mem.reembed()
            assert out["ok"] and out["processed"] == 2
            assert mem.health.state == HEALTHY
            assert mem.recall("a", "kitten on a rug")["results"][-1]["embedded"] is True
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_off_width_vectors_of_a_registry_model_never_fault_it(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    """all-minilm-l6-v2 gives 384-d vectors by its manifest: rows claiming another width are stray."""
    settings = Settings(
        db_path=tmp_path / "m.db",
        embedding_mode="onnx",
        models_dir=minilm_models_dir,
        embedding_model="all-minilm-l6-v2",
    )
    with Memory(settings, start_background=False) as mem:
        assert mem.embeddings.try_load()
        mem.store("a", "The cat sits on the mat")
        mem.storage.db.connection().execute("UPDATE memories SET embedding_dim = 768")
    with Memory(settings, start_background=False) as mem:
        assert mem.embeddings.try_load() and mem.health.state == HEALTHY
        assert mem.get_queue_status()["depth"] == 1  # queued again on model ready
        mem.drain_queue()
        assert mem.recall("a", "kitten on a rug")["results"][-1]["embedded"] is True


def test_memory_with_no_embeddings_never_queues(memory: Memory) -> None:
    assert isinstance(memory.embeddings.backend, NoEmbeddings)
    memory.store("a", "x marks the spot")
    assert memory.get_queue_status()["depth"] == 0
