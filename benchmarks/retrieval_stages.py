"""Where SQLite retrieval's time goes at one corpus size, stage by stage (retrieval only, vector given).

    python benchmarks/retrieval_stages.py ../shared/data/locomo --size 100000 --db /tmp/stages.db

Builds (once: ``--db`` is kept) the corpus ``latency.py`` builds (LoCoMo turns and numbered variants,
random unit vectors, one agent), embeds the questions, runs the retrieval pipeline ``latency.py``
measures (all channels, no gate) once to load the index, then times each question with every
stage wrapped in a timer: the vector channel's int8 pass, exact re-scoring and selection, each
keyword channel, fusion, hydration (row fetches + context), penalties, confidence. Prints per-stage
p50 and mean (ms), with the thread CPU time of the whole retrieval, so a loaded machine still
shows each stage's share. ``--sequential`` times the old order (the vector scan on the caller's thread
before the keyword queries); ``--interleave`` recalls every question both ways in one process and checks
that the answers are identical (the A/B to read on a loaded machine). ``--reads-ab`` recalls every
question on two stores over the same file, alternating: one reading as before round 7 (no memory map,
every term counted each time) and one as now (the file mapped, term counts kept while the FTS5 index is
unchanged); ``--cold-counts`` forgets the kept counts before each pass (the first-seen-terms case).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import minilm_models_dir  # noqa: E402
from latency import AGENT, MODEL, corpus, fill  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval import confidence, fusion, pipeline  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest  # noqa: E402
from cpersona.storage.interface import VectorQuery  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.sqlite import keyword, vector_index, vector_quant, vector_worker  # noqa: E402
from cpersona.storage.sqlite.term_counts import TermCounts  # noqa: E402
from cpersona.text import utc_now  # noqa: E402

TIMES: dict[str, list[float]] = defaultdict(list)
CPU: dict[str, list[float]] = defaultdict(list)
_CURRENT: dict[str, float] = defaultdict(float)
_CURRENT_CPU: dict[str, float] = defaultdict(float)


def timed(owner: Any, name: str, label: str) -> None:
    """Wrap ``owner.name`` so each call adds its wall time to stage ``label`` of the current query."""
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0, t0 = time.thread_time(), time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _CURRENT[label] += time.perf_counter() - t0
            _CURRENT_CPU[label] += time.thread_time() - c0

    setattr(owner, name, wrapper)


def instrument() -> None:
    """Wrap the stages (class attributes, so every session's objects are timed)."""
    timed(vector_index.VectorIndex, "sync", "vector: index sync")
    timed(vector_index.VectorIndex, "_mask", "vector: scope mask")
    timed(vector_index, "approximate", "vector: int8 pass")
    timed(vector_index.VectorIndex, "_best_approximate", "vector: int8 pass + select")
    timed(vector_index.VectorIndex, "_exact", "vector: exact re-score")
    timed(vector_index.VectorIndex, "search", "vector: search (all)")
    timed(vector_index.SqliteVectorSearch, "nearest", "vector: nearest (all, incl. sync)")
    timed(vector_index.SqliteVectorSearch, "nearest_soon", "vector: start (sync; small: scan)")
    timed(vector_index.VectorIndex, "candidates", "vector: scan (worker thread)")
    timed(vector_index.VectorIndex, "finish", "vector: finish (caller)")
    submit = vector_worker.submit

    def submit_timed(work: Callable[[], Any]) -> Any:
        pending = submit(work)
        timed(pending, "result", "vector: caller waits for the scan")
        return pending

    vector_worker.submit = submit_timed  # type: ignore[assignment]
    timed(keyword, "plan_terms", "keyword: term counts (plan)")
    timed(keyword.SqliteKeywordSearch, "memories", "keyword: trigram memories")
    timed(keyword.SqliteKeywordSearch, "memories_words", "keyword: words memories")
    timed(keyword.SqliteKeywordSearch, "episodes", "keyword: episodes")
    timed(fusion, "fuse", "fusion")
    timed(RecallPipeline, "_hydrate", "hydrate (row fetches + context)")
    timed(RecallPipeline, "_penalise", "penalties")
    timed(confidence, "apply", "confidence")
    timed(confidence, "key_on_cosine", "confidence")
    _ = vector_quant


def at_once(search: Any, *args: Any, **kwargs: Any) -> Callable[[], list[tuple[int, float]]]:
    """``nearest`` run at once on the caller's thread (what recall did before ``nearest_soon``)."""
    found = search.nearest(*args, **kwargs)
    return lambda: found


def interleaved(
    mem: Memory, full: RecallPipeline, questions: list[str], vectors: list[Any], repeat: int
) -> int:
    """A/B in one process: the deferred scan against the old order, question by question."""
    deferred = pipeline.nearest_soon
    modes = {"deferred scan": deferred, "sequential": at_once}
    wall: dict[str, list[float]] = defaultdict(list)
    caller: dict[str, list[float]] = defaultdict(list)
    process: dict[str, list[float]] = defaultdict(list)
    answers: dict[str, list[Any]] = defaultdict(list)
    for rep in range(repeat + 1):
        for n, (q, v) in enumerate(zip(questions, vectors, strict=True)):
            order = list(modes) if n % 2 == 0 else list(reversed(modes))
            for name in order:
                pipeline.nearest_soon = modes[name]  # type: ignore[assignment]
                request = RecallRequest(scope=Scope(AGENT), query=q, limit=10)
                p0, c0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
                with mem.storage.read() as session:
                    out = full.run(
                        session,
                        request,
                        query_vector=VectorQuery(v, mem.embeddings.model_id, mem.embeddings.dimension),
                        now=utc_now(),
                    )
                if rep == 0:
                    continue  # the first pass loads the index
                wall[name].append(time.perf_counter() - t0)
                caller[name].append(time.thread_time() - c0)
                process[name].append(time.process_time() - p0)
                answers[name].append([(r["ref"], r["match_reason"]["score"]) for r in out.rows])
    pipeline.nearest_soon = deferred  # type: ignore[assignment]
    print(f"{'order':14} {'wall p50':>9} {'p95':>7} {'caller CPU p50':>15} {'process CPU p50':>16}")
    for name in modes:
        w, c, p = (np.array(x[name]) * 1e3 for x in (wall, caller, process))
        print(
            f"{name:14} {np.percentile(w, 50):9.2f} {np.percentile(w, 95):7.2f}"
            f" {np.percentile(c, 50):15.2f} {np.percentile(p, 50):16.2f}"
        )
    a, b = answers["deferred scan"], answers["sequential"]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    ratio = np.median(np.array(wall["deferred scan"]) / np.array(wall["sequential"]))
    print(f"identical top 10 (refs and scores): {same}/{len(a)}; paired wall ratio p50 {ratio:.3f}")
    return 0 if same == len(a) else 1


def reads_interleaved(
    settings: Settings, mem: Memory, full: RecallPipeline, questions: list[str], vectors: list[Any], args: Any
) -> int:
    """A/B in one process: this file read as before (no memory map, every term count run each time)
    against now (mapped, term counts kept), question by question, alternating which goes first."""
    before = Memory(settings, start_background=False)
    before.storage.db.connection().execute("PRAGMA mmap_size = 0")
    before.storage.term_counts = None  # type: ignore[attr-defined]
    stores = {"before (unmapped, counted)": before, "now (mapped, kept counts)": mem}
    wall: dict[str, list[float]] = defaultdict(list)
    caller: dict[str, list[float]] = defaultdict(list)
    answers: dict[str, list[Any]] = defaultdict(list)
    try:
        for rep in range(args.repeat + 1):
            if args.cold_counts:
                mem.storage.term_counts = TermCounts()  # type: ignore[attr-defined]
            for n, (q, v) in enumerate(zip(questions, vectors, strict=True)):
                for name in list(stores) if n % 2 == 0 else list(reversed(stores)):
                    store = stores[name]
                    request = RecallRequest(scope=Scope(AGENT), query=q, limit=10)
                    c0, t0 = time.thread_time(), time.perf_counter()
                    with store.storage.read() as session:
                        out = full.run(
                            session,
                            request,
                            query_vector=VectorQuery(v, mem.embeddings.model_id, mem.embeddings.dimension),
                            now=utc_now(),
                        )
                    if rep == 0 and not args.cold_counts:
                        continue  # the first pass loads the index (and, for now, keeps the counts)
                    wall[name].append(time.perf_counter() - t0)
                    caller[name].append(time.thread_time() - c0)
                    answers[name].append([(r["ref"], r["match_reason"]["score"]) for r in out.rows])
    finally:
        before.close()
    print(f"{'reads':28} {'wall p50':>9} {'p95':>7} {'caller CPU p50':>15} {'mean':>7}")
    for name in stores:
        w, c = (np.array(x[name]) * 1e3 for x in (wall, caller))
        print(
            f"{name:28} {np.percentile(w, 50):9.2f} {np.percentile(w, 95):7.2f} {np.percentile(c, 50):15.2f} {c.mean():7.2f}"
        )
    a, b = (answers[name] for name in stores)
    same = sum(x == y for x, y in zip(a, b, strict=True))
    old, new = (np.array(caller[name]) for name in stores)
    print(
        f"identical top 10 (refs and scores): {same}/{len(a)}; paired caller CPU ratio p50 {np.median(new / old):.3f}"
    )
    return 0 if same == len(a) else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--db", type=Path, required=True, help="kept between runs (built when absent)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--repeat", type=int, default=1, help="measured passes over the questions")
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="scan the vector index before the keyword queries, on the caller's thread (the old order)",
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="no stage timers: each question recalled both ways (deferred scan, --sequential order), "
        "alternating which goes first; prints both and whether every top 10 (refs, scores) is identical",
    )
    parser.add_argument(
        "--reads-ab",
        action="store_true",
        help="no stage timers: each question recalled as read before round 7 (no memory map, every term "
        "counted) and now, alternating; prints both and whether every top 10 (refs, scores) is identical",
    )
    parser.add_argument(
        "--cold-counts",
        action="store_true",
        help="with --reads-ab: forget the kept term counts before each pass",
    )
    args = parser.parse_args()
    texts, questions = corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]
    models_dir = args.models_dir or minilm_models_dir(Path("/tmp"))
    if not args.db.exists():
        rate = fill(args.db, texts, args.size, 384, MODEL)
        print(f"built {args.size} rows at {rate} rows/s")
    settings = Settings(
        db_path=args.db, models_dir=models_dir, embedding_model=MODEL, recent_recall_penalty=1.0
    )
    with Memory(settings, start_background=False) as mem:
        mem.embeddings.start()
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        vectors = [mem.embeddings.embed_query(q) for q in questions]
        full = RecallPipeline(settings)
        if args.interleave:
            return interleaved(mem, full, questions, vectors, args.repeat)
        if args.reads_ab:
            return reads_interleaved(settings, mem, full, questions, vectors, args)
        instrument()
        if args.sequential:
            pipeline.nearest_soon = at_once  # type: ignore[assignment]
        total: list[float] = []
        cpu: list[float] = []
        for rep in range(args.repeat + 1):
            for q, v in zip(questions, vectors, strict=True):
                request = RecallRequest(scope=Scope(AGENT), query=q, limit=10)
                _CURRENT.clear()
                _CURRENT_CPU.clear()
                c0, t0 = time.thread_time(), time.perf_counter()
                with mem.storage.read() as session:
                    full.run(
                        session,
                        request,
                        query_vector=VectorQuery(v, mem.embeddings.model_id, mem.embeddings.dimension),
                        now=utc_now(),
                    )
                if rep == 0:
                    continue  # the first pass loads the index
                total.append(time.perf_counter() - t0)
                cpu.append(time.thread_time() - c0)
                for label, spent in _CURRENT.items():
                    TIMES[label].append(spent)
                    CPU[label].append(_CURRENT_CPU[label])
    print(f"{'stage':40} {'p50 ms':>8} {'mean ms':>8} {'CPU p50':>8} {'CPU mean':>8}")
    for label in sorted(TIMES):
        ms = np.array(TIMES[label]) * 1e3
        cms = np.array(CPU[label]) * 1e3
        print(
            f"{label:40} {np.percentile(ms, 50):8.2f} {ms.mean():8.2f}"
            f" {np.percentile(cms, 50):8.2f} {cms.mean():8.2f}"
        )
    for label, values in (("retrieval (wall)", total), ("retrieval (thread CPU)", cpu)):
        ms = np.array(values) * 1e3
        print(f"{label:40} {np.percentile(ms, 50):8.2f} {ms.mean():8.2f}  p95 {np.percentile(ms, 95):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
