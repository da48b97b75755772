"""The isolation rule (docs/architecture.md#the-isolation-rule-written-once) is written once in ``storage.scope``: its SQL (either engine's
placeholders), its Python predicate and the SQLite vector index's mask all give the documented answer.

The oracle below restates that section's table independently of ``Scope.tests``; the SQL is run in a
real SQLite database, and PostgreSQL's text must be SQLite's with only the placeholders and
literals swapped (tests/api/test_isolation.py runs every tool against a real PostgreSQL).
"""

from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.storage.postgres.sql import POSTGRES
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.sql import SQLITE
from cpersona.storage.sqlite.vector_index import VectorIndex

VALUES = ("", "a", "b")
ROWS = [(a, p, c) for a in ("a", "b", "c") for p in VALUES for c in VALUES]

axis = st.sampled_from((None, *VALUES))
scopes = st.builds(
    Scope,
    agent_id=st.sampled_from((None, "a", "b", "c")),
    project_id=axis,
    channel=axis,
    agents=st.none() | st.frozensets(st.sampled_from(("a", "b", "c", "z"))),
)


def spec_admits(scope: Scope, agent: str, project: str, channel: str) -> bool:
    """The isolation table: agent exact; project None any, '' global only, X X-or-global; channel None/'' any,
    X X-or-channel-less; ``agents`` (ACL grants) restricts on top, an empty set admits nothing."""
    if scope.agent_id is not None and agent != scope.agent_id:
        return False
    if scope.agents is not None and agent not in scope.agents:
        return False
    if scope.project_id is not None and project not in {scope.project_id, ""}:
        return False
    return not scope.channel or channel in {scope.channel, ""}


def _table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, agent_id TEXT, project_id TEXT, channel TEXT)")
    conn.executemany("INSERT INTO t (agent_id, project_id, channel) VALUES (?, ?, ?)", ROWS)
    return conn


CONN = _table()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scopes)
def test_sql_python_and_spec_agree(scope: Scope) -> None:
    expected = {i + 1 for i, row in enumerate(ROWS) if spec_admits(scope, *row)}
    clause, params = scope.where(SQLITE)
    assert {r[0] for r in CONN.execute(f"SELECT id FROM t WHERE {clause}", params)} == expected
    assert {i + 1 for i, row in enumerate(ROWS) if scope.admits(*row)} == expected
    # An alias prefixes every column; the parameters are the same.
    aliased, aliased_params = scope.where(SQLITE, "x")
    assert aliased_params == params
    assert {
        r[0] for r in CONN.execute(f"SELECT x.id FROM t AS x WHERE {aliased}", aliased_params)
    } == expected


@given(scopes)
def test_postgres_predicate_is_the_same_rule_in_its_dialect(scope: Scope) -> None:
    lite, lite_params = scope.where(SQLITE, "m")
    pg, pg_params = scope.where(POSTGRES, "m")
    assert pg_params == lite_params
    literals = {"1": "TRUE", "0": "FALSE"}
    as_pg = [literals.get(c, c.replace("?", "%s")) for c in lite.split(" AND ")]
    assert pg.split(" AND ") == as_pg


def test_channel_filter_is_left_out_where_a_table_has_no_channel() -> None:
    clause, params = Scope("a", "p", "c").where(SQLITE, has_channel=False)
    assert "channel" not in clause and params == ["a", "p"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scopes)
def test_the_vector_index_mask_is_the_same_rule(scope: Scope) -> None:
    expected = [spec_admits(scope, *row) for row in ROWS]
    assert _INDEX._mask(scope).tolist() == expected


def _index() -> VectorIndex:
    # The rows above, one unit vector each, appended as the feed would load them.
    index = VectorIndex("memories", "m", 4)
    unit = np.array([1, 0, 0, 0], dtype="<f4").tobytes()
    index._append([(i + 1, a, p, c, unit) for i, (a, p, c) in enumerate(ROWS)])
    return index


_INDEX = _index()
