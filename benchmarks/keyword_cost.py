"""Cost of each keyword channel per question, in-process, on LoCoMo-derived text (no model, no MCP).

    python benchmarks/keyword_cost.py ../shared/data/locomo [--sizes 10000 100000] [--questions 200]
        [--db-dir DIR] [--json out.json] [--per-term]

The corpus is the one ``benchmarks/latency.py`` builds (every LoCoMo turn
"[<session date>] <speaker>: <text>", then numbered variants up to the size),
written once per size into ``--db-dir`` (kept between runs: a second run reuses
the file) without vectors. Each question is turned into ``QueryTerms`` exactly as
recall does, then each keyword channel is timed alone through the storage layer
(``session.keyword``) with the pipeline's depth (30): the trigram memories
channel (``fts_memories``), the word index (``fts_words``), episodes, and the
LIKE stand-in (forced, as if MATCH had found nothing). ``keyword`` is all the
channels recall runs, back to back. p50 / p95 per channel; ``--per-term`` adds
the questions that cost the most and the document counts of their terms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table, summary_ms, write_json  # noqa: E402
from latency import AGENT, corpus, text_at  # noqa: E402

from cpersona.core.text import format_ts, utc_now  # noqa: E402
from cpersona.retrieval.match_query import query_terms  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.sqlite.keyword import (
    SqliteKeywordSearch,  # noqa: E402
    plan_terms,  # noqa: E402
)
from cpersona.storage.sqlite.store import SqliteStore  # noqa: E402
from cpersona.storage.values import NewMemory, QueryTerms  # noqa: E402

DEPTH = 30  # fusion.channel_depth for limit 10


def fill(db: Path, texts: list[str], count: int) -> float:
    """Write ``count`` LoCoMo-derived rows without vectors; seconds taken."""
    store = SqliteStore(db)
    now = format_ts(utc_now())
    started = time.perf_counter()
    for start in range(0, count, 5000):
        with store.write() as s:
            for k in range(start, min(start + 5000, count)):
                s.memories.insert(
                    NewMemory(AGENT, "", "", "", text_at(texts, k), None, None, now, now, None, None, None)
                )
    store.close()
    return time.perf_counter() - started


def _channels(session: Any, terms: QueryTerms, scope: Scope) -> dict[str, Any]:
    like_only = QueryTerms((), terms.like, terms.words)
    return {
        "fts_memories": lambda: session.keyword.memories(terms, scope, DEPTH),
        "fts_words": lambda: session.keyword.memories_words(terms, scope, DEPTH),
        "fts_episodes": lambda: session.keyword.episodes(terms, scope, DEPTH),
        "like": lambda: session.keyword.memories(like_only, scope, DEPTH),
    }


def measure(
    db: Path, questions: list[str], rounds: int = 2
) -> tuple[dict[str, dict[str, float]], list[dict]]:
    """Per-channel p50/p95 over the questions (the last of ``rounds`` passes), and per-question costs."""
    store = SqliteStore(db)
    scope = Scope(AGENT)
    samples: dict[str, list[float]] = {}
    per_question: list[dict] = []
    for _ in range(rounds):
        samples = {"keyword": [], "fts_memories": [], "fts_words": [], "fts_episodes": [], "like": []}
        per_question = []
        for q in questions:
            terms = query_terms(q)
            costs: dict[str, float] = {}
            with store.recall_read() as session:  # as a recall reads
                for name, run in _channels(session, terms, scope).items():
                    t0 = time.perf_counter()
                    run()
                    costs[name] = time.perf_counter() - t0
                    samples[name].append(costs[name])
            # what recall runs: the two memory channels and episodes (LIKE only as a stand-in)
            samples["keyword"].append(costs["fts_memories"] + costs["fts_words"] + costs["fts_episodes"])
            per_question.append({"question": q, **{k: round(v * 1000, 3) for k, v in costs.items()}})
    store.close()
    return {k: summary_ms(v) for k, v in samples.items()}, per_question


def prune_stats(db: Path, questions: list[str]) -> dict[str, dict[str, float]]:
    """Per channel: terms per question, terms dropped per question (mean), share of questions bounded."""
    store = SqliteStore(db)
    out: dict[str, dict[str, float]] = {}
    with store.read() as session:
        search = session.keyword
        conn = search.conn  # type: ignore[attr-defined]
        budget = search.row_budget  # type: ignore[attr-defined]
        for table, pick in (("memories_fts", lambda t: t.match), ("memories_words", lambda t: t.words)):
            plans = [
                (pick(query_terms(q)), plan_terms(conn, table, pick(query_terms(q)), budget))
                for q in questions
            ]
            n = max(len(plans), 1)
            out[table] = {
                "terms": round(sum(len(t) for t, _ in plans) / n, 2),
                "dropped": round(sum(len(p.dropped) for _, p in plans) / n, 2),
                "bounded_share": round(sum(p.bounded for _, p in plans) / n, 3),
            }
    store.close()
    return out


def term_counts(db: Path, question: str) -> dict[str, Any]:
    """Rows matching each term of ``question`` in the trigram and the word index (what MATCH has to rank)."""
    store = SqliteStore(db)
    terms = query_terms(question)
    out: dict[str, Any] = {"trigram": {}, "words": {}}
    with store.read() as session:
        conn = session.conn  # type: ignore[attr-defined]
        for term in terms.match:
            phrase = '"' + term.replace('"', '""') + '"'
            out["trigram"][term] = conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", [phrase]
            ).fetchone()[0]
        for word in terms.words:
            phrase = '"' + word.replace('"', '""') + '"'
            out["words"][word] = conn.execute(
                "SELECT count(*) FROM memories_words WHERE memories_words MATCH ?", [phrase]
            ).fetchone()[0]
    store.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--conversation", help="only this conversation's turns (a file stem, e.g. 41)")
    parser.add_argument("--questions", type=int, default=200, help="the first N LoCoMo questions (0 = all)")
    parser.add_argument("--db-dir", type=Path, default=Path("/tmp/cpersona-keyword-cost"))
    parser.add_argument("--per-term", action="store_true", help="show the costliest questions' term counts")
    parser.add_argument("--budget", type=int, help="the keyword row budget (default: the product's)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.budget is not None:  # measure another budget without editing the product
        SqliteKeywordSearch.__init__.__defaults__ = (args.budget,)
    data_dir = args.data_dir
    if args.conversation:  # one conversation alone, as benchmarks/locomo.py stores it
        data_dir = args.db_dir / f"conv{args.conversation}"
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / f"{args.conversation}.json").write_bytes(
            (args.data_dir / f"{args.conversation}.json").read_bytes()
        )
    texts, questions = corpus(data_dir)
    if args.questions:
        questions = questions[: args.questions]
    args.db_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": machine(), "questions": len(questions), "sizes": {}}
    rows = []
    for size in args.sizes:
        db = args.db_dir / f"kw{size}{'-' + args.conversation if args.conversation else ''}.db"
        if not db.exists():
            print(f"filling {size:,} rows into {db} ({fill(db, texts, size):.1f} s)", file=sys.stderr)
        stats, per_question = measure(db, questions)
        per_question.sort(key=lambda r: -(r["fts_memories"] + r["fts_words"]))
        pruning = prune_stats(db, questions)
        results["sizes"][str(size)] = {"channels": stats, "pruning": pruning, "costliest": per_question[:10]}
        for table, p in pruning.items():
            print(
                f"{size:,} {table}: {p['terms']} terms/question, {p['dropped']} dropped, "
                f"{p['bounded_share']:.1%} of questions bounded (no term within budget)"
            )
        for name, s in stats.items():
            rows.append([f"{size:,}", name, s["p50_ms"], s["p95_ms"], s["mean_ms"]])
        if args.per_term:
            for entry in per_question[:3]:
                entry["terms"] = term_counts(db, entry["question"])
                print(size, entry, file=sys.stderr)
    print_table(["size", "channel", "p50 ms", "p95 ms", "mean ms"], rows)
    if args.json:
        write_json(str(args.json), results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
