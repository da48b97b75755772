"""The engine_latency.py corpus in a PostgreSQL database, loaded once and optionally kept between runs.

Used by ``pg_recall_profile.py`` and ``pg_recall_ab.py``: the LoCoMo turns, then numbered variants of
them up to the size, with engine_latency.py's vectors (real turn vectors, synthetic ones between two
turns for the variants), one agent, loaded through the import path (``bulk_load`` + ``write_batch``,
500 rows a batch) as engine_latency.py loads it. ``--database NAME`` keeps the database (and reuses it
when it already holds ``size`` rows), so repeated measurements skip the load and the HNSW build.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_latency import AGENT, BATCH, MODEL, _corpus, corpus_batch, real_vectors  # noqa: E402


def database_url(admin: str, name: str) -> str:
    """The URL of database ``name`` on the server of ``admin``."""
    return urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))


def _rows(url: str) -> int:
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM memories").fetchone()
            return int(row[0]) if row else 0
    except psycopg.Error:
        return -1


def load(url: str, data_dir: Path, models_dir: Path, size: int) -> None:
    """``size`` corpus rows with their vectors through the import path (the schema is migrated first)."""

    from cpersona.core.text import format_ts, utc_now
    from cpersona.storage.postgres.store import PgStore

    texts, _ = _corpus(data_dir)
    base, model_id = real_vectors(data_dir, models_dir, Path(tempfile.gettempdir()))
    store = PgStore(url)
    try:
        rows, now, dim = store.portability_rows(), format_ts(utc_now()), base.shape[1]
        with rows.bulk_load():
            for first in range(0, size, BATCH):
                n = min(BATCH, size - first)
                batch = corpus_batch(texts, base, first, n, model_id, now)
                rows.write_batch(batch, queued_at=None, active_model=(model_id, dim))
    finally:
        store.close()


@contextmanager
def corpus_database(
    admin: str, data_dir: Path, models_dir: Path, size: int, keep: str | None
) -> Iterator[str]:
    """A database holding the corpus: ``keep`` (reused when it holds ``size`` rows, kept afterwards), else a
    throwaway one."""
    import psycopg

    name = keep or f"cpersona_recall_{size}"
    url = database_url(admin, name)
    if keep is None or _rows(url) != size:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        print(f"loading {size} rows into {name}", file=sys.stderr, flush=True)
        load(url, data_dir, models_dir, size)
    try:
        yield url
    finally:
        if keep is None:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def corpus_from_arguments(args: argparse.Namespace) -> Iterator[str]:
    """The corpus database that ``add_corpus_arguments``'s arguments name, on their cluster (a throwaway
    one for ``auto``); fills ``args.models_dir`` with an assembled MiniLM when it is unset."""
    from _common import minilm_models_dir
    from pg_latency import postgres_admin_url

    with tempfile.TemporaryDirectory() as tmp:
        args.models_dir = args.models_dir or minilm_models_dir(Path(tmp))
        with (
            postgres_admin_url(None if args.db_url == "auto" else args.db_url) as admin,
            corpus_database(admin, args.data_dir, args.models_dir, args.size, args.database) as url,
        ):
            yield url


def settings(url: str, models_dir: Path, tmp: Path) -> Any:
    """engine_latency.py's settings on PostgreSQL (recent-recall penalty off: the timed recalls repeat)."""
    from cpersona.config import Settings

    return Settings(
        db_path=tmp / "unused.db",
        db_url=url,
        models_dir=models_dir,
        embedding_model=MODEL,
        recent_recall_penalty=1.0,
        model_sharing="off",  # each process embeds its own queries (never another arm's, or a neighbour's)
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=tmp / "oc.toml",
    )


def questions(data_dir: Path, n: int) -> list[str]:
    """The first ``n`` LoCoMo questions in engine_latency.py's (shuffled) order."""
    return _corpus(data_dir)[1][:n]


__all__ = [
    "AGENT",
    "MODEL",
    "corpus_database",
    "corpus_from_arguments",
    "database_url",
    "load",
    "questions",
    "settings",
]


def add_corpus_arguments(parser: argparse.ArgumentParser, *, queries: int) -> None:
    """The arguments of a benchmark on this corpus: data dir, cluster, size, questions, kept database, models."""
    parser.add_argument("data_dir", type=Path)
    parser.add_argument(
        "--db-url", default="auto", help="a PostgreSQL admin URL, or 'auto' for a throwaway cluster"
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=queries)
    parser.add_argument(
        "--database", help="keep the loaded corpus in this database (reused when it has --size rows)"
    )
    parser.add_argument("--models-dir", type=Path)
