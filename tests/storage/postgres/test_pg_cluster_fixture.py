"""The test cluster itself (tests/pg_cluster.py): a test's databases are dropped when it ends.

The drop once read the database's name from the wrong part of pgserver's URL (its socket directory
sits in the query string) and dropped nothing, silently: every database of a session stayed until the
cluster was deleted, some 60,000 files per worker.
"""

from __future__ import annotations

import psycopg
from pg_cluster import PgCluster


def _databases(cluster: PgCluster) -> set[str]:
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


def test_a_dropped_database_is_gone_and_the_others_stay(pg_cluster: PgCluster) -> None:
    kept, dropped = pg_cluster.create(), pg_cluster.create()
    kept_name, dropped_name = PgCluster.name(kept), PgCluster.name(dropped)
    # A connection left open does not keep the database alive (the fixture's drop forces it).
    lingering = psycopg.connect(dropped)
    try:
        assert {kept_name, dropped_name} <= _databases(pg_cluster)
        pg_cluster.drop(dropped)
        assert dropped_name not in _databases(pg_cluster)
        assert kept_name in _databases(pg_cluster)
    finally:
        lingering.close()
        pg_cluster.drop(kept)
    assert kept_name not in _databases(pg_cluster)
