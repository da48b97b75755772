"""What every PostgreSQL repository shares: running statements, the dialect and scope predicate, vector values.

``Executor`` runs statements either on the connection of an open transaction
(``PgStore.read`` / ``write``) or, for autocommit sessions, on a pooled
connection borrowed for that one statement. Rows come back as dicts.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg_pool import ConnectionPool

from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import Dialect

Params = Sequence[Any]

#: psycopg's placeholders; PostgreSQL's boolean literals.
POSTGRES = Dialect("%s", "TRUE", "FALSE")


class PgVector:
    """A float32 vector (little-endian bytes, as the storage boundary carries them) bound as a pgvector value."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes) -> None:
        self.blob = blob


class _VectorDumper(Dumper):
    # pgvector's binary input: int16 dimension, int16 unused, then big-endian float4s.
    format = Format.BINARY

    def dump(self, obj: PgVector) -> bytes:
        values = np.frombuffer(obj.blob, dtype="<f4")
        return struct.pack(">HH", values.shape[0], 0) + values.astype(">f4").tobytes()


class _VectorLoader(Loader):
    # Text output "[0.1,0.2,...]": pgvector prints the shortest text that reads back to the same float4.
    def load(self, data: Any) -> bytes:
        text = bytes(data).decode("ascii").strip("[]")
        return np.array(text.split(","), dtype="<f4").tobytes() if text else b""


class _VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        return np.frombuffer(bytes(data)[4:], dtype=">f4").astype("<f4").tobytes()


def register_vector(conn: psycopg.Connection[Any]) -> None:
    """Teach ``conn`` the ``vector`` type (the extension must exist)."""
    row = conn.execute("SELECT 'vector'::regtype::oid").fetchone()
    assert row is not None
    oid = int(row["oid"] if isinstance(row, dict) else row[0])
    dumper = type("PgVectorDumper", (_VectorDumper,), {"oid": oid})
    conn.adapters.register_dumper(PgVector, dumper)
    conn.adapters.register_loader(oid, _VectorLoader)
    conn.adapters.register_loader(oid, _VectorBinaryLoader)


def where(scope: Scope, alias: str = "", *, has_channel: bool = True) -> tuple[str, list[str]]:
    """The isolation rule of ``storage.scope`` (docs/architecture.md#the-isolation-rule-written-once) with PostgreSQL placeholders."""
    return scope.where(POSTGRES, alias, has_channel=has_channel)


def vector_param(blob: bytes | None) -> PgVector | None:
    """A stored vector as a bind parameter (None stays NULL)."""
    return None if blob is None else PgVector(blob)


def source_clause(source_id: str | None, alias: str = "") -> tuple[str, list[Any]]:
    """``AND source.id starts with source_id`` (empty when no filter)."""
    if source_id is None:
        return "", []
    prefix = f"{alias}." if alias else ""
    return f" AND left(COALESCE({prefix}source::jsonb ->> 'id', ''), %s) = %s", [len(source_id), source_id]


class Executor:
    """Runs statements on ``conn`` (an open transaction) or, when None, on a pooled autocommit connection."""

    __slots__ = ("pool", "conn")

    def __init__(self, pool: ConnectionPool[Any], conn: psycopg.Connection[Any] | None = None) -> None:
        self.pool = pool
        self.conn = conn

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self.conn is not None:
            yield self.conn
        else:
            with self.pool.connection() as conn:
                yield conn

    def all(self, sql: Any, params: Params = ()) -> list[dict[str, Any]]:
        """Every row of a query."""
        with self._connection() as conn:
            return list(conn.execute(sql, params).fetchall())

    def all_binary(self, sql: Any, params: Params = ()) -> list[dict[str, Any]]:
        """Every row of a query, transferred in binary (vectors without a text round trip)."""
        with self._connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    def one(self, sql: Any, params: Params = ()) -> dict[str, Any] | None:
        """The first row of a query, or None."""
        with self._connection() as conn:
            row: dict[str, Any] | None = conn.execute(sql, params).fetchone()
            return row

    def value(self, sql: Any, params: Params = ()) -> Any:
        """The first column of the first row (None when there is no row)."""
        row = self.one(sql, params)
        return None if row is None else next(iter(row.values()))

    def run(self, sql: Any, params: Params = ()) -> int:
        """Run a statement; rows it affected."""
        with self._connection() as conn:
            return conn.execute(sql, params).rowcount

    def many(self, sql: Any, rows: Sequence[Params]) -> None:
        """Run a statement once per parameter row."""
        if not rows:
            return
        with self._connection() as conn, conn.cursor() as cur:
            cur.executemany(sql, rows)

    def savepoint(self) -> Any:
        """A savepoint inside a transaction (so a refused statement does not abort it); nothing in autocommit."""
        return self.conn.transaction() if self.conn is not None else nullcontext()
