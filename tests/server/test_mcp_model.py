"""End to end with the real MiniLM ONNX model: the installed server over stdio finds a paraphrase."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from long_answer import LONG, QUESTION, SHORT
from mcp_helpers import ALL_TOOL_NAMES, McpSession, mcp_session, server_env, stdio_target, transport_session

pytestmark = pytest.mark.slow


def wait_for_model(session: McpSession, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session.call("get_queue_status")["model_ready"]:
            return
        time.sleep(0.2)
    pytest.fail("the embedding model did not become ready over MCP")


def _minilm(models_dir: Path) -> dict[str, str]:
    """The settings that make a server embed with MiniLM from ``models_dir``."""
    return {
        "CPERSONA_EMBEDDING_MODE": "onnx",
        "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
        "CPERSONA_MODELS_DIR": str(models_dir),
    }


def _minilm_env(tmp_path: Path, models_dir: Path) -> dict[str, str]:
    """A server's environment with MiniLM from ``models_dir``."""
    return server_env(tmp_path, **_minilm(models_dir))


@contextmanager
def _ready(tmp_path: Path, models_dir: Path, transport: str = "stdio") -> Iterator[McpSession]:
    """A server with MiniLM over ``transport``, its model loaded."""
    with transport_session(transport, tmp_path, **_minilm(models_dir)) as session:
        wait_for_model(session)
        yield session


def test_paraphrase_is_the_best_match_over_mcp(minilm_models_dir: Path, tmp_path: Path) -> None:
    env = _minilm_env(tmp_path, minilm_models_dir)
    with mcp_session(stdio_target(env)) as session:
        # The handshake did not wait for the model; tools answer while it loads.
        assert sorted(t.name for t in session.list_tools().tools) == sorted(ALL_TOOL_NAMES)
        wait_for_model(session)
        agent = "minilm"
        target = session.call(
            "store", {"agent_id": agent, "message": {"content": "The cat sits on the mat."}}
        )
        assert target["result"] == "stored" and target["embedded"] is True, target
        for text in (
            "Quarterly revenue grew by eight percent.",
            "The train to Berlin leaves at noon.",
            "Compile the kernel with debug symbols.",
        ):
            stored = session.call("store", {"agent_id": agent, "message": {"content": text}})
            assert stored["embedded"] is True
        recalled = session.call("recall", {"agent_id": agent, "query": "A kitten is resting on a rug"})
        assert recalled["ok"] is True and recalled["results"], recalled
        best = recalled["results"][-1]
        assert best["id"] == target["id"], [r["content"] for r in recalled["results"]]
        assert best["match_reason"].get("cosine") is not None
        assert "advisory" not in recalled or not recalled["advisory"].get("degraded")


def test_a_question_that_counts_over_mcp_says_what_it_searched(
    minilm_models_dir: Path, tmp_path: Path
) -> None:
    """The count's content and keyword weight reach the client in the schema'd response and trace."""
    with _ready(tmp_path, minilm_models_dir) as session:
        for text in (
            "Went to a concert yesterday: an organ recital at the cathedral.",
            "How many songs has the band recorded in total?",
        ):
            session.call("store", {"agent_id": "count", "message": {"content": text}})
        recalled = session.call(
            "recall",
            {"agent_id": "count", "query": "How many concerts have I been to?", "trace": True},
        )
    assert recalled["search"]["keyword_weight"] == 0.5, recalled["search"]
    assert recalled["trace"]["channels"]["vector"]["content"] == "concerts have I been to"
    assert recalled["count"] == 2, recalled


def test_missing_model_serves_keyword_only_at_once(tmp_path: Path) -> None:
    # Default onnx model absent and the hub unreachable (offline): the handshake must not wait for
    # the fetch attempt, and recall must work keyword-only while saying why.
    env = server_env(
        tmp_path, CPERSONA_EMBEDDING_MODE="onnx", CPERSONA_AUTO_FETCH_MODEL="true", HF_HUB_OFFLINE="1"
    )
    started = time.monotonic()
    with mcp_session(stdio_target(env)) as session:
        assert sorted(t.name for t in session.list_tools().tools) == sorted(ALL_TOOL_NAMES)
        assert time.monotonic() - started < 30
        stored = session.call(
            "store", {"agent_id": "offline", "message": {"content": "offline keyword note"}}
        )
        assert stored["result"] == "stored" and stored["embedded"] is False
        deadline = time.monotonic() + 30
        while True:
            recalled = session.call("recall", {"agent_id": "offline", "query": "keyword note"})
            advisory = recalled.get("advisory") or {}
            if advisory.get("state") == "fault" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert recalled["results"][-1]["id"] == stored["id"]
        assert advisory.get("degraded") is True and advisory.get("state") == "fault", recalled
        assert "fetch-model" in str(advisory)


def _cold_env(tmp_path: Path, models: Path, **extra: str) -> dict[str, str]:
    # Model sharing off: no other process (another test's server) lends this one a loaded model.
    return server_env(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(models),
        CPERSONA_MODEL_SHARING="off",
        **extra,
    )


def _seed(tmp_path: Path, models: Path) -> None:
    with mcp_session(stdio_target(_cold_env(tmp_path, models))) as session:
        wait_for_model(session)
        for text in ("The cat sits on the mat.", "Quarterly revenue grew by eight percent."):
            stored = session.call("store", {"agent_id": "cold", "message": {"content": text}})
            assert stored["embedded"] is True


def test_a_cold_servers_first_recall_waits_for_the_loading_model(
    minilm_models_dir: Path, tmp_path: Path
) -> None:
    """A client that starts a server per call (the MCP inspector's --cli) gets vector search on its
    one recall: the first call arrives while the model loads, and recall waits for it (≤ 3 s)."""
    _seed(tmp_path, minilm_models_dir)
    with mcp_session(stdio_target(_cold_env(tmp_path, minilm_models_dir))) as session:
        recalled = session.call("recall", {"agent_id": "cold", "query": "A kitten is resting on a rug"})
    assert recalled["search"]["vector"] is True and "advisory" not in recalled, recalled
    assert recalled["results"][-1]["content"] == "The cat sits on the mat."
    assert recalled["results"][-1]["match_reason"].get("cosine") is not None


def test_with_no_wait_the_first_recall_is_keyword_only_and_says_so(
    minilm_models_dir: Path, tmp_path: Path
) -> None:
    # The bound is the setting: 0 answers at once, keyword-only, with the loading advisory (as before).
    _seed(tmp_path, minilm_models_dir)
    env = _cold_env(tmp_path, minilm_models_dir, CPERSONA_RECALL_MODEL_WAIT="0")
    with mcp_session(stdio_target(env)) as session:
        recalled = session.call("recall", {"agent_id": "cold", "query": "cat mat"})
    assert recalled["search"]["vector"] is False, recalled
    assert recalled["advisory"]["degraded"] is True and recalled["advisory"]["state"] in (
        "unknown",
        "loading",
    )


def test_a_long_memory_matched_by_a_block_previews_that_part_over_mcp(
    minilm_models_dir: Path, tmp_path: Path
) -> None:
    with _ready(tmp_path, minilm_models_dir) as session:
        target = session.call("store", {"agent_id": "a", "message": {"content": LONG}})
        for text in SHORT:
            session.call("store", {"agent_id": "a", "message": {"content": text}})
        best = session.call("recall", {"agent_id": "a", "query": QUESTION, "limit": 3})["results"][-1]
        block = best["match_reason"]["block"]
        assert best["id"] == target["id"] and block["start"] <= LONG.index("Ingrid") < block["end"]
        # The preview is the part around the block, not the prefix, and still expands by its ref.
        assert (
            best["content_truncated"] is True
            and best["content_len"] == len(LONG)
            and best["ref"] == target["ref"]
        )
        start = best["content_start"]
        assert best["content"] == LONG[start : start + 500] and "Ingrid" in best["content"]


CAVENDISH = (
    "ヘンリー・キャヴェンディッシュの父親は多くの財産を所有していたが、ヘンリーに与える生活費は年間500ポンドに過ぎなかった。",
    "ヘンリー・キャヴェンディッシュはイギリスの化学者である。貴族の家に生まれ、ケンブリッジ大学で学んだ。",
    "ヘンリー・キャヴェンディッシュは1766年の論文で水素の発生を発表した。",
)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_japanese_question_to_minilm_is_ranked_by_its_words_over_mcp(
    transport: str, minilm_models_dir: Path, tmp_path: Path
) -> None:
    """MiniLM does not read Japanese: the answer is the keyword ranking, by the question's character
    pairs ("大学" is followed by "は" in the question, "で" in the answer: no trigram of it is shared)."""
    with _ready(tmp_path, minilm_models_dir, transport) as session:
        for text in CAVENDISH:
            assert (
                session.call("store", {"agent_id": "ja", "message": {"content": text}})["result"] == "stored"
            )
        recalled = session.call(
            "recall", {"agent_id": "ja", "query": "キャヴェンディッシュが通った大学はどこか", "trace": True}
        )
    assert recalled["search"]["vector"] is False and recalled["search"]["vector_weight"] == 0.0
    assert recalled["results"][-1]["content"] == CAVENDISH[1], [r["content"] for r in recalled["results"]]
    assert recalled["trace"]["channels"]["fts_memories"]["hits"], recalled["trace"]["channels"]
