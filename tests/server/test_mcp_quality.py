"""The quality gate and its tools through a real MCP client over stdio, with the real MiniLM model."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import McpSession, mcp_session, server_env, stdio_target
from test_mcp_model import wait_for_model

pytestmark = pytest.mark.slow

FACTS = [
    "The deploy pipeline for payments runs on Jenkins every night at 2am",
    "Ana prefers dark roast coffee from Kenya",
    "We moved the staging database to Postgres 16 in March",
    "The team standup is at 9:30 every weekday in room Kestrel",
    "Bob is allergic to peanuts and shellfish",
    "The quarterly finance report is due on the 15th",
    "Our Kubernetes cluster runs in eu-west-1",
    "Release 2.4 shipped the new login page with passkeys",
    "The office wifi password rotates on the first Monday of each month",
    "Carla leads the mobile team and reviews every iOS change",
    "Invoices are archived for seven years in the cold storage bucket",
    "Grafana alerts for the checkout service go to the payments channel",
]
EXACT = "Incident note: ERR_PAY_4021 means the card issuer declined the payment"


def model_env(tmp_path: Path, models_dir: Path, **extra: str) -> dict[str, str]:
    return server_env(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(models_dir),
        CPERSONA_RECENT_RECALL_PENALTY="1.0",
        # The gate tests compare cuts across precision levels over seconds of recalls: the server's own
        # query-kernel check (~2 s after load) must not land between the calibration and the levels.
        CPERSONA_EMBED_QUERY_KERNEL="exact",
        **extra,
    )


def seed(session: McpSession, agent: str) -> None:
    for fact in FACTS:
        assert session.call("store", {"agent_id": agent, "message": {"content": fact}})["result"] == "stored"
    stored = session.call("store", {"agent_id": agent, "project_id": "shop", "message": {"content": EXACT}})
    assert stored["result"] == "stored"
    deadline = time.monotonic() + 60
    while session.call("get_queue_status")["depth"] and time.monotonic() < deadline:
        time.sleep(0.2)


def test_gate_tools_over_mcp(minilm_models_dir: Path, tmp_path: Path) -> None:
    # Self-calibration off: this test looks at the gate before and after calibrating by hand.
    env = model_env(tmp_path, minilm_models_dir, CPERSONA_AUTO_CALIBRATE="false")
    with mcp_session(stdio_target(env)) as session:
        wait_for_model(session)
        seed(session, "q")
        before = session.call("recall", {"agent_id": "q", "query": "what coffee does Ana like"})
        assert before["gate"]["kind"] == "heuristic" and "not calibrated" in before["gate"]["reason"]

        out = session.call("calibrate_threshold", {"agent_id": "q"})
        assert out["rows"] == len(FACTS) + 1 and out["gate"]["probes"] >= 60
        t = out["gate"]["thresholds"]
        assert t["strict"] > t["balanced"] > t["lenient"]
        real = session.call("recall", {"agent_id": "q", "query": "what coffee does Ana like"})
        assert real["gate"]["kind"] == "calibrated" and real["gate"]["passed"] is True
        assert real["results"][-1]["content"] == FACTS[1]

        queries = [
            "how do volcanoes erupt",
            "what is the capital of Peru",
            "who painted the Mona Lisa",
            "best way to learn the violin",
            "what coffee does Ana like",
            "when is the standup",
        ]
        cut = {}
        for level in ("strict", "balanced", "lenient"):
            set_out = session.call("set_recall_precision", {"agent_id": "q", "precision": level})
            assert set_out["recalibrated"] is True and set_out["level"] == level
            cut[level] = sum(
                1
                for q in queries
                if not session.call("recall", {"agent_id": "q", "query": q})["gate"]["passed"]
            )
        assert cut["strict"] >= cut["balanced"] >= cut["lenient"], cut
        got = session.call("get_recall_precision", {"agent_id": "q"})
        assert (
            got["level"] == "lenient" and got["overridden"] is True and got["global"]["level"] == "balanced"
        )
        cleared = session.call("set_recall_precision", {"agent_id": "q", "precision": ""})
        assert cleared["overridden"] is False and cleared["beta"] == 1.0
        bad = session.call("set_recall_precision", {"agent_id": "q", "precision": "extreme"})
        assert bad["ok"] is False and bad["error_code"] == "invalid_input"

        # A cut no query below reaches: the project-scoped exact match still comes back.
        session.call("calibrate_threshold", {"agent_id": "q", "method": "zscore", "z_factor": 10})
        exact = session.call(
            "recall",
            {
                "agent_id": "q",
                "project_id": "shop",
                "query": "grandma's tomato soup, volcano hikes and ERR_PAY_4021",
            },
        )
        assert exact["gate"]["passed"] is False
        assert [r["content"] for r in exact["results"]] == [EXACT]
        assert exact["results"][0]["match_reason"]["gate"] == "exact_match"
        fallback = session.call("recall", {"agent_id": "q", "query": "volcano soup with kenya beans"})
        assert (
            fallback["results"] == [] and fallback["gate"]["passed"] is False
        )  # no gate_fallback: confidence off

        session.call("pause_persistence", {"ttl_seconds": 60})
        paused = session.call("calibrate_threshold", {"agent_id": "q"})
        assert paused["ok"] is False and paused["error_code"] == "persistence_paused"
        session.call("resume_persistence")
        health = session.call("check_health", {"agent_id": "q", "checks": ["calibration"]})
        assert health["status"] == "healthy" and health["checks"]["calibration"]["calibrated_agents"] == 1

        seed(session, "gone")
        session.call("calibrate_threshold", {"agent_id": "gone"})
        deleted = session.call("delete_agent_data", {"agent_id": "gone"})
        assert deleted["calibration_discarded"] is True
        assert (
            session.call("get_recall_precision", {"agent_id": "gone"})["calibration"]["calibrated"] is False
        )

    sidecar = tmp_path / "memory.db.calibration.json"
    data = json.loads(sidecar.read_text())
    assert set(data["agents"]) == {"q"}
    with mcp_session(stdio_target(env)) as session:  # the sidecar survives a restart
        wait_for_model(session)
        state = session.call("get_recall_precision", {"agent_id": "q"})
        assert state["calibration"]["gate"] == "calibrated" and state["calibration"]["method"] == "zscore"

    data["agents"]["q"]["fingerprint"]["model_id"] = "an-older-model"
    sidecar.write_text(json.dumps(data))
    with mcp_session(stdio_target(env)) as session:  # a changed fingerprint: recalibrated in the background
        wait_for_model(session)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = session.call("get_recall_precision", {"agent_id": "q"})
            if state["calibration"].get("fingerprint", {}).get("model_id") == "all-minilm-l6-v2":
                break
            time.sleep(0.2)
        assert state["calibration"]["gate"] == "calibrated" and "stale" not in state["calibration"]
    assert json.loads(sidecar.read_text())["agents"]["q"]["fingerprint"]["model_id"] == "all-minilm-l6-v2"


def test_gate_fallback_and_confidence_over_mcp(minilm_models_dir: Path, tmp_path: Path) -> None:
    env = model_env(tmp_path, minilm_models_dir, CPERSONA_CONFIDENCE_ENABLED="true")
    with mcp_session(stdio_target(env)) as session:
        wait_for_model(session)
        seed(session, "c")
        ranked = session.call("recall", {"agent_id": "c", "query": "payments alerts and deploys"})
        scores = [r["match_reason"]["score"] for r in ranked["results"]]
        assert {r["match_reason"]["signal"] for r in ranked["results"]} == {"confidence"}
        assert scores == sorted(scores)
        session.call("calibrate_threshold", {"agent_id": "c", "method": "zscore", "z_factor": 10})
        fallback = session.call("recall", {"agent_id": "c", "query": "volcano soup with kenya beans"})
        assert fallback["gate"]["keyed_on"] == "confidence" and fallback["gate"]["passed"] is False
        assert fallback["results"] and all(r["gate_fallback"] is True for r in fallback["results"])
        exact = session.call(
            "recall",
            {
                "agent_id": "c",
                "project_id": "shop",
                "query": "grandma's tomato soup, volcano hikes and ERR_PAY_4021",
            },
        )
        assert EXACT in [r["content"] for r in exact["results"]]


def test_keyword_only_server_has_no_gate_to_calibrate(tmp_path: Path) -> None:
    with mcp_session(stdio_target(server_env(tmp_path))) as session:
        session.call("store", {"agent_id": "k", "message": {"content": "keyword only memory"}})
        recalled = session.call("recall", {"agent_id": "k", "query": "keyword"})
        assert recalled["gate"]["kind"] == "off" and "keyword-only" in recalled["gate"]["reason"]
        refused = session.call("calibrate_threshold", {"agent_id": "k"})
        assert refused["ok"] is False and refused["error_code"] == "calibration_unavailable"
        saved = session.call("set_recall_precision", {"agent_id": "k", "precision": "strict"})
        assert saved["ok"] is True and saved["recalibrated"] is False and saved["level"] == "strict"


def wait_calibrated(session: McpSession, agent: str, timeout: float = 90) -> dict[str, Any]:
    """Poll get_recall_precision until the agent's background calibration landed."""
    deadline = time.monotonic() + timeout
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        state = session.call("get_recall_precision", {"agent_id": agent})["calibration"]
        if state["gate"] == "calibrated":
            return state
        time.sleep(0.2)
    raise AssertionError(f"agent {agent!r} was never calibrated: {state}")


def test_default_settings_calibrate_by_themselves_and_explain(
    minilm_models_dir: Path, tmp_path: Path
) -> None:
    env = model_env(tmp_path, minilm_models_dir)  # CPERSONA_AUTO_CALIBRATE left at its default
    with mcp_session(stdio_target(env)) as session:
        wait_for_model(session)
        seed(session, "auto")
        state = wait_calibrated(session, "auto")
        assert state["trigger"] == "first" and state["rows"] >= 10
        empty = session.call("recall", {"agent_id": "auto", "query": "who painted the Mona Lisa"})
        assert empty["results"] == [] and empty["gate"]["kind"] == "calibrated"
        assert "calibrated balanced gate" in empty["explanation"] and "similarity" in empty["explanation"]
        found = session.call(
            "recall", {"agent_id": "auto", "query": "what coffee does Ana like", "trace": True}
        )
        assert found["results"][-1]["content"] == FACTS[1] and "explanation" not in found
        for row in found["results"]:
            reason = row["match_reason"]
            assert math.isclose(math.prod(reason["factors"].values()), reason["score"], rel_tol=1e-4)
            assert reason["gate"] == "passed"
        assert found["trace"]["returned"] == [r["ref"] for r in reversed(found["results"])]
        typo = session.call("recall", {"agent_id": "atuo", "query": "coffee"})
        assert (
            typo["ok"]
            and typo["notice"] == "agent 'atuo' has no rows; known agents: 'auto' (did you mean 'auto'?)"
        )


def test_two_servers_on_one_file_keep_each_others_calibrations(
    minilm_models_dir: Path, tmp_path: Path
) -> None:
    env = model_env(tmp_path, minilm_models_dir)
    with mcp_session(stdio_target(env)) as left, mcp_session(stdio_target(env)) as right:
        wait_for_model(left)
        wait_for_model(right)
        seed(left, "left")
        seed(right, "right")
        wait_calibrated(left, "left")
        wait_calibrated(right, "right")
    data = json.loads((tmp_path / "memory.db.calibration.json").read_text())
    assert {"left", "right"} <= set(data["agents"])  # neither server's write lost the other's agent


def test_postgresql_servers_share_one_gate_whatever_the_file_path(
    minilm_models_dir: Path, tmp_path: Path, pg_cluster: Any
) -> None:
    url = pg_cluster.create()
    env = model_env(
        tmp_path,
        minilm_models_dir,
        CPERSONA_DB_URL=url,
        CPERSONA_DB_PATH=str(tmp_path / "never" / "there" / "never.db"),  # a folder that does not exist
    )
    with mcp_session(stdio_target(env)) as one, mcp_session(stdio_target(env)) as two:
        wait_for_model(one)
        wait_for_model(two)
        seed(one, "shared")
        state = wait_calibrated(one, "shared")
        seen = wait_calibrated(
            two, "shared", timeout=10
        )  # the other server: the same gate, from the database
        assert seen["created_at"] == state["created_at"] and seen["rows"] == state["rows"]
        recalled = two.call("recall", {"agent_id": "shared", "query": "what coffee does Ana like"})
        assert recalled["ok"] and recalled["gate"]["kind"] == "calibrated"
        health = two.call("check_health", {"checks": ["calibration"]})
        assert (
            health["status"] == "healthy"
            and "calibration_state" in health["checks"]["calibration"]["location"]
        )
    assert not (tmp_path / "never").exists()
