"""The CLI as a person uses it, with the real MiniLM model: `cpersona recall` only looks (a later ranking is
unchanged unless --record), says why an answer is empty, names an unknown agent (recall, checkup,
export, calibrate), and `cpersona calibrate` summarises what the gate now does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_cli_commands import run

from cpersona.config import Settings
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.memory import Memory

pytestmark = pytest.mark.slow

FACTS = [
    "Helm charts live in the deploy repo under charts/",
    "To roll back a bad production release run helm rollback prod <revision>",
    "The staging cluster runs in eu-west-1",
    "Alerts go to the #ops channel",
    "Ana owns the payments service",
    "The release train leaves every Tuesday",
    "Postgres backups run nightly at 2am",
    "The VPN config is in 1Password",
    "Bob prefers tabs over spaces",
    "We use ArgoCD for GitOps",
    "Incident ERR_DEPLOY_17 means the image tag is missing",
    "On-call swaps every Thursday",
]
ROLLBACK = "how do I roll back a bad production release"


@pytest.fixture(scope="module")
def db(
    tmp_path_factory: pytest.TempPathFactory, minilm_models_dir: Path, minilm_backend: OnnxBackend
) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("cli-explained")
    env = {
        "CPERSONA_EMBEDDING_MODE": "onnx",
        "CPERSONA_MODELS_DIR": str(minilm_models_dir),
        "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
        # Scores are compared across CLI processes: each embeds its query on the float32 graph, and none
        # is served by a longer-lived host on the auto kernel (the setting is part of the sharing key).
        "CPERSONA_EMBED_QUERY_KERNEL": "exact",
        # The recent-recall penalty is off by default; the --record test below needs it on.
        "CPERSONA_RECENT_RECALL_PENALTY": "0.7",
    }
    # Seeded in-process with the same model (one load, not twelve CLI processes): what is tested is the
    # CLI's recall and calibrate on a file the model wrote.
    settings = Settings(
        db_path=tmp / "memory.db",
        models_dir=minilm_models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        operating_context=False,
        auto_calibrate=False,
    )
    with Memory(settings, backend=minilm_backend) as memory:
        assert memory.wait_until_ready(60)
        for fact in FACTS:
            assert memory.store("devops-bot", fact)["ok"]
    return tmp, env


def recall(db: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    tmp, env = db
    return run(tmp, "recall", *args, **env)


def ranking(db: tuple[Path, dict[str, str]]) -> list[tuple[str, float]]:
    out = recall(db, "devops-bot", ROLLBACK, "--limit", "3", "--json")
    assert out.returncode == 0, out.stderr
    return [(r["ref"], r["match_reason"]["score"]) for r in json.loads(out.stdout)["results"]]


def test_a_cli_recall_does_not_change_a_later_ranking_unless_recorded(
    db: tuple[Path, dict[str, str]],
) -> None:
    before = ranking(db)
    looked = recall(db, "devops-bot", "Helm", "--limit", "1")
    assert looked.returncode == 0 and "★ best" in looked.stdout.splitlines()[-1]
    assert ranking(db) == before  # the person looked; the agent's next ranking is what it was
    assert ranking(db) == before  # ... however often they look
    recorded = recall(db, "devops-bot", ROLLBACK, "--limit", "3", "--record")
    assert recorded.returncode == 0
    after = ranking(db)  # what --record fed: every row it returned ranks × 0.7 now
    assert {ref for ref, _ in after} == {ref for ref, _ in before}
    for ref, score in after:
        assert score == pytest.approx(dict(before)[ref] * 0.7, rel=1e-4)
    help_text = recall(db, "--help").stdout
    assert "--record" in help_text and "recent-recall penalty" in help_text


def test_an_empty_answer_says_why_and_the_gate_in_words(db: tuple[Path, dict[str, str]]) -> None:
    out = recall(db, "devops-bot", "what is the capital of Peru", "--limit", "3")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and lines[0] == "0 results"
    why = next(line for line in lines if line.startswith("why: "))
    assert "Nothing returned" in why and "threshold 0.150" in why and "similarity" in why
    assert any(line.startswith("gate: The uncalibrated gate") for line in lines)


def test_calibrate_summarises_and_names_an_unknown_agent(db: tuple[Path, dict[str, str]]) -> None:
    tmp, env = db
    out = run(tmp, "calibrate", **env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("agent 'devops-bot': 12 memories measured; gate threshold")
    assert any("balanced" in line and "← in force" in line for line in lines)
    assert any(line.strip().startswith("strict") and "/80" in line for line in lines)
    again = run(tmp, "calibrate", **env)
    assert again.returncode == 0 and again.stdout.startswith("nothing to calibrate")
    strict = run(tmp, "calibrate", "--agent", "devops-bot", "--precision", "strict", "--json", **env)
    result = json.loads(strict.stdout)["calibrated"][0]
    assert result["precision"] == {"level": "strict", "beta": 2.0, "overridden": True}
    assert result["trigger"] == "explicit" and result["gate"]["probes_cut"]["strict"] >= 60
    gated = json.loads(recall(db, "devops-bot", "what is the capital of Peru", "--json").stdout)
    assert gated["gate"]["kind"] == "calibrated" and gated["gate"]["level"] == "strict"
    typo = run(tmp, "calibrate", "--agent", "devops-bto", **env)
    assert typo.returncode == 1
    assert "notice: agent 'devops-bto' has no rows; known agents: 'devops-bot'" in typo.stderr
    assert "did you mean 'devops-bot'?" in typo.stderr


def test_unknown_agents_are_named_in_recall_checkup_and_export(db: tuple[Path, dict[str, str]]) -> None:
    tmp, env = db
    notice = "notice: agent 'devops-bto' has no rows; known agents: 'devops-bot' (did you mean 'devops-bot'?)"
    out = recall(db, "devops-bto", "Helm")
    assert out.returncode == 0 and notice in out.stdout.splitlines()
    checkup = run(tmp, "checkup", "--agent", "devops-bto", "--checks", "calibration", **env)
    assert checkup.returncode == 0 and notice in checkup.stdout.splitlines()
    export = run(tmp, "export", str(tmp / "typo.jsonl"), "--agent", "devops-bto", "--quiet", **env)
    assert export.returncode == 0 and notice in export.stdout.splitlines()
    known = run(tmp, "checkup", "--agent", "devops-bot", "--checks", "calibration", **env)
    assert "notice:" not in known.stdout
