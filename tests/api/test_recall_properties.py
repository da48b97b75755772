"""Property-based checks of recall over random corpora: scope, order, limit, no duplicates."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.storage.scope import Scope

pytestmark = BOTH_ENGINES

AGENTS = ["alice", "bob", ""]
PROJECTS = [None, "", "x", "y"]
CHANNELS = [None, "", "slack", "mail"]
WORDS = ["apple", "rocket", "garden", "deploy", "東京タワー", "tea", "NEAR", "a*b", "x:y", "(z)"]

rows = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sampled_from(PROJECTS),
        st.sampled_from(CHANNELS),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    ),
    min_size=1,
    max_size=25,
)
queries = st.tuples(
    st.sampled_from([*AGENTS, None]),
    st.sampled_from(PROJECTS),
    st.sampled_from(CHANNELS),
    st.lists(st.sampled_from([*WORDS, "zz", ""]), max_size=3).map(" ".join),
    st.integers(min_value=0, max_value=12),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=rows, query=queries)
def test_recall_respects_scope_order_and_limit(tmp_path_factory, new_db_url, corpus, query) -> None:
    path: Path = tmp_path_factory.mktemp("prop") / "m.db"
    with Memory(
        Settings(db_path=path, db_url=new_db_url(), embedding_mode="none"), backend=NoEmbeddings()
    ) as mem:
        for agent, project, channel, text in corpus:
            mem.store(agent, text, project_id=project, channel=channel)
        agent, project, channel, text, limit = query
        out = mem.recall(agent, text, limit=limit, project_id=project, channel=channel)
        results = out["results"]
        scope = Scope(agent, project, channel)
        assert len(results) <= limit
        assert len({r["ref"] for r in results if "ref" in r}) == len([r for r in results if "ref" in r])
        for row in results:
            if row["type"] == "memory":
                assert scope.admits(row["agent_id"], row["project_id"], row["channel"]), (scope, row)
        scores = [r["match_reason"]["score"] for r in results if "match_reason" in r]
        assert scores == sorted(scores)  # worst → best
