"""Where SQLite retrieval's time goes at one corpus size, stage by stage (retrieval only, vector given).

    python benchmarks/retrieval_stages.py ../shared/data/locomo --size 100000 --db /tmp/stages.db

Builds (once: ``--db`` is kept) the corpus ``latency.py`` builds (LoCoMo turns and numbered variants,
one agent; vectors: random unit ones, or with ``--vectors mix`` the real MiniLM vectors of the turns
and, for the variants, synthetic ones between two turns as ``engine_latency.py`` makes them: random
directions make every first pass look better or worse than on real embeddings), embeds the questions, runs the retrieval pipeline ``latency.py``
measures (all channels, no gate) once to load the index, then times each question with every
stage wrapped in a timer: the vector channel's int8 pass, exact re-scoring and selection, each
keyword channel, fusion, hydration (row fetches + context), penalties, confidence. Prints per-stage
p50 and mean (ms), with the thread CPU time of the whole retrieval, so a loaded machine still
shows each stage's share. ``--sequential`` times the old order (the vector scan on the caller's thread
before the keyword queries); ``--interleave`` recalls every question both ways in one process and checks
that the answers are identical (the A/B to read on a loaded machine); ``--bits-ab`` does the same
for the vector index's first pass: sign bits then int8 (the default from ``bits_from`` rows in
scope) against int8 alone. ``--reads-ab`` recalls every
question on two stores over the same file, alternating: one reading as before round 7 (no memory map,
every term counted and ranked in SQL each time) and one as now (the file mapped, term counts and bm25
shares kept while the FTS5 index is unchanged); ``--cold-counts`` forgets the kept counts and shares
before each pass (the first-seen-terms case).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import minilm_models_dir  # noqa: E402
from engine_latency import real_vectors, vector_block  # noqa: E402
from latency import AGENT, MODEL, corpus, fill  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.core.text import utc_now  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval import confidence, fusion, pipeline  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.sqlite import keyword, vector_index, vector_quant, vector_worker  # noqa: E402
from cpersona.storage.sqlite.term_counts import TermCounts  # noqa: E402
from cpersona.storage.sqlite.term_scores import TermScores  # noqa: E402
from cpersona.storage.values import VectorQuery  # noqa: E402

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
    timed(vector_index.VectorIndex, "_best_bits", "vector: sign-bit pass + select")
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
    timed(keyword.SqliteKeywordSearch, "_kept_shares", "keyword: bm25 from kept shares (incl. reads)")
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
    mem: Memory,
    full: RecallPipeline,
    questions: list[str],
    vectors: list[Any],
    repeat: int,
    modes: dict[str, Callable[[], None]],
) -> int:
    """A/B in one process, question by question: each of the two ``modes`` (a name and what puts the
    process in it) recalls every question, alternating which goes first. Prints wall, caller CPU, the
    vector scan's own thread CPU (worker or caller) and process CPU, and whether the answers match."""
    wall: dict[str, list[float]] = defaultdict(list)
    caller: dict[str, list[float]] = defaultdict(list)
    process: dict[str, list[float]] = defaultdict(list)
    scan: dict[str, list[float]] = defaultdict(list)
    answers: dict[str, list[Any]] = defaultdict(list)
    scan_cpu = [0.0]
    candidates = vector_index.VectorIndex.candidates

    def candidates_timed(*a: Any, **k: Any) -> Any:
        c0 = time.thread_time()
        try:
            return candidates(*a, **k)
        finally:
            scan_cpu[0] += time.thread_time() - c0

    vector_index.VectorIndex.candidates = candidates_timed  # type: ignore[method-assign]
    for rep in range(repeat + 1):
        for n, (q, v) in enumerate(zip(questions, vectors, strict=True)):
            order = list(modes) if n % 2 == 0 else list(reversed(modes))
            for name in order:
                modes[name]()
                request = RecallRequest(scope=Scope(AGENT), query=q, limit=10)
                scan_cpu[0] = 0.0
                p0, c0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
                out = recall_once(mem, mem, full, request, v)
                if rep == 0:
                    continue  # the first pass loads the index (and takes the bits' centre)
                wall[name].append(time.perf_counter() - t0)
                caller[name].append(time.thread_time() - c0)
                process[name].append(time.process_time() - p0)
                scan[name].append(scan_cpu[0])
                answers[name].append([(r["ref"], r["match_reason"]["score"]) for r in out.rows])
    vector_index.VectorIndex.candidates = candidates  # type: ignore[method-assign]
    print(
        f"{'mode':16} {'wall p50':>9} {'p95':>7} {'caller CPU p50':>15} {'scan CPU p50':>13}"
        f" {'process CPU p50':>16}"
    )
    for name in modes:
        w, c, sc, p = (np.array(x[name]) * 1e3 for x in (wall, caller, scan, process))
        print(
            f"{name:16} {np.percentile(w, 50):9.2f} {np.percentile(w, 95):7.2f}"
            f" {np.percentile(c, 50):15.2f} {np.percentile(sc, 50):13.2f} {np.percentile(p, 50):16.2f}"
        )
    first, second = modes
    a, b = answers[first], answers[second]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    ratio = np.median(np.array(wall[first]) / np.array(wall[second]))
    scan_ratio = np.median(np.array(scan[first]) / np.maximum(np.array(scan[second]), 1e-9))
    print(
        f"identical top 10 (refs and scores): {same}/{len(a)}; paired {first} / {second}:"
        f" wall p50 {ratio:.3f}, scan CPU p50 {scan_ratio:.3f}"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"peak RSS of this process: {peak:.0f} MB ({len(mem.storage.indexes.get('memories', *_model(mem)))} rows)"
    )
    return 0 if same == len(a) else 1


def _model(mem: Memory) -> tuple[str, int]:
    return mem.embeddings.model_id, mem.embeddings.dimension


def scan_orders() -> dict[str, Callable[[], None]]:
    """``--interleave``'s modes: the deferred scan (today's order) and the scan before the keyword queries."""
    deferred = pipeline.nearest_soon

    def set_deferred() -> None:
        pipeline.nearest_soon = deferred  # type: ignore[assignment]

    def set_sequential() -> None:
        pipeline.nearest_soon = at_once  # type: ignore[assignment]

    return {"deferred scan": set_deferred, "sequential": set_sequential}


def first_passes(mem: Memory) -> dict[str, Callable[[], None]]:
    """``--bits-ab``'s modes: the sign-bit pass before the int8 one (from ``bits_from`` rows, the default)
    against the int8 pass alone over every row in scope."""
    index = mem.storage.indexes.get("memories", *_model(mem))
    default = index.bits_from

    def bits() -> None:
        index.bits_from = default

    def int8_only() -> None:
        index.bits_from = 1 << 62

    return {"bits + int8": bits, "int8 only": int8_only}


def reads_interleaved(
    settings: Settings, mem: Memory, full: RecallPipeline, questions: list[str], vectors: list[Any], args: Any
) -> int:
    """A/B in one process: this file read as before (no memory map, every term count run each time)
    against now (mapped, term counts kept), question by question, alternating which goes first."""
    before = Memory(settings, start_background=False)
    before.storage.db.connection().execute("PRAGMA mmap_size = 0")
    before.storage.term_counts = None  # type: ignore[attr-defined]
    before.storage.term_scores = None  # type: ignore[attr-defined]
    stores = {"before (unmapped, counted)": before, "now (mapped, kept counts)": mem}
    wall: dict[str, list[float]] = defaultdict(list)
    caller: dict[str, list[float]] = defaultdict(list)
    answers: dict[str, list[Any]] = defaultdict(list)
    try:
        for rep in range(args.repeat + 1):
            if args.cold_counts:
                mem.storage.term_counts = TermCounts()  # type: ignore[attr-defined]
                mem.storage.term_scores = TermScores()  # type: ignore[attr-defined]
            for n, (q, v) in enumerate(zip(questions, vectors, strict=True)):
                for name in list(stores) if n % 2 == 0 else list(reversed(stores)):
                    store = stores[name]
                    request = RecallRequest(scope=Scope(AGENT), query=q, limit=10)
                    c0, t0 = time.thread_time(), time.perf_counter()
                    out = recall_once(store, mem, full, request, v)
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


def recall_once(
    store: Memory, model: Memory, full: RecallPipeline, request: RecallRequest, vector: Any
) -> Any:
    """One pipeline run on ``store``'s file in one read snapshot, with ``vector`` of ``model``'s embedder."""
    with store.storage.read() as session:
        return full.run(
            session,
            request,
            query_vector=VectorQuery(vector, model.embeddings.model_id, model.embeddings.dimension),
            now=utc_now(),
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--db", type=Path, required=True, help="kept between runs (built when absent)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--vectors",
        choices=("random", "mix"),
        default="random",
        help="vectors of a new --db: random unit ones, or real turn vectors and mixes of two (engine_latency)",
    )
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
        "--bits-ab",
        action="store_true",
        help="no stage timers: each question recalled with the sign-bit pass and with the int8 pass alone "
        "(interleaved as --interleave); prints both and whether every top 10 (refs, scores) is identical",
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
        help="with --reads-ab: forget the kept term counts and bm25 shares before each pass",
    )
    args = parser.parse_args()
    texts, questions = corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]
    models_dir = args.models_dir or minilm_models_dir(Path("/tmp"))
    if not args.db.exists():
        vectors_at = None
        if args.vectors == "mix":
            base, _ = real_vectors(args.data_dir, models_dir, Path(tempfile.gettempdir()))
            vectors_at = partial(vector_block, base)
        rate = fill(args.db, texts, args.size, 384, MODEL, vectors_at)
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
        if args.interleave or args.bits_ab:
            modes = first_passes(mem) if args.bits_ab else scan_orders()
            return interleaved(mem, full, questions, vectors, args.repeat, modes)
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
