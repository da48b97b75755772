"""Long records (docs/retrieval.md#long-records): recall speed and quality on a history of long turns.

    python benchmarks/long_records.py --data /path/to/locomo [--rows 500] [--json out.json]

Builds two histories of ``--rows`` memories from LoCoMo, stored one by one through ``Memory.store``
(SQLite, MiniLM int8 queries, default settings except ``recent_recall_penalty=1`` so asking every
question twice is fair):

- **long**: every turn of the asked conversation (then turns of a second one, never asked about, up to
  ``--rows``) as a long assistant-style answer: turns of a third conversation first (at least
  ``--depth`` characters, past what MiniLM's 256 tokens read, ~1,100 characters of English), then the
  turn itself, then ~400 characters more. The evidence sits deep inside each row.
- **short**: the same turns alone, cut to ``--cut`` characters (160).

Prints store latency per row (long rows embed one forward per block; and, on 50 of the long rows, the
embedding of the row alone against the row with its blocks: what blocks add to a store), recall latency p50/p95 of the
asked conversation's real questions (categories 1-4) on both histories, interleaved per question, and
the p50 ratio long / short; then recall@10 / NDCG@10 of the evidence turns on the long history with
blocks on, and again after deleting every block (the memories' own vectors only: blocks off).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, machine, minilm_models_dir, print_table, summary_ms, write_json  # noqa: E402
from _locomo_data import Conversation  # noqa: E402
from _retrieval_metrics import score_question  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.services.long_records import embed_with_blocks  # noqa: E402

Row = tuple[str, str, str | None]  # (dia_id, content, timestamp)


def long_rows(
    asked: Conversation, extra: Conversation, filler: Conversation, rows: int, depth: int
) -> list[Row]:
    """``rows`` long memories: each real turn of ``asked`` (then ``extra``) after ``depth``+ characters of
    ``filler`` turns and before ~400 more (seeded, so every run builds the same history)."""
    rng = random.Random(32)
    pad = [text for _, text, _ in filler.turns()]

    def padding(chars: int) -> str:
        out: list[str] = []
        while sum(len(p) + 1 for p in out) < chars:
            out.append(rng.choice(pad))
        return " ".join(out)

    return [
        (dia, f"{padding(depth)} {text} {padding(400)}", stamp)
        for dia, text, stamp in turns(asked, extra, rows)
    ]


def turns(asked: Conversation, extra: Conversation, rows: int) -> list[Row]:
    """The history's real turns: every turn of ``asked``, then ``extra``'s, ``rows`` in all (``extra``'s
    dia_ids prefixed with its name: LoCoMo numbers every conversation's turns alike, and a msg_id seen
    before is a duplicate ``store`` skips)."""
    others = [(f"{extra.name}/{dia}", text, stamp) for dia, text, stamp in extra.turns()]
    return [*asked.turns(), *others][:rows]


def store_all(mem: Memory, rows: list[Row]) -> tuple[dict[int, str], list[float]]:
    """Store every row one by one; (memory id → dia_id, seconds per store)."""
    ids: dict[int, str] = {}
    took: list[float] = []
    for dia, content, stamp in rows:
        start = time.perf_counter()
        out = mem.store("a", content, msg_id=dia, timestamp=stamp)
        took.append(time.perf_counter() - start)
        assert out.get("embedded") is True, out
        ids[int(out["id"])] = dia
    return ids, took


def ranked(mem: Memory, question: str, ids: dict[int, str]) -> list[str]:
    found = mem.recall("a", question, limit=10)["results"]
    return [ids[int(r["id"])] for r in reversed(found) if int(r["id"]) in ids]  # best first


def quality(mem: Memory, questions: list[dict[str, Any]], ids: dict[int, str]) -> dict[str, float]:
    scores = [score_question(ranked(mem, q["question"], ids), q["evidence"]) for q in questions]
    return {k: round(sum(s[k] for s in scores) / len(scores), 3) for k in ("recall@10", "ndcg@10", "empty")}


def interleaved(
    questions: list[dict[str, Any]], mems: dict[str, Memory], timing: dict[str, list[float]]
) -> None:
    """Each question asked of every memory in turn (the same sitting for all), seconds per recall."""
    for q in questions:
        for name, mem in mems.items():
            start = time.perf_counter()
            mem.recall("a", q["question"], limit=10)
            timing[name].append(time.perf_counter() - start)


def settings(tmp: Path, name: str, models: Path) -> Settings:
    return Settings(
        **QUERY_CACHE_OFF,  # every recall embeds its query
        db_path=tmp / name / "memory.db",
        embedding_mode="onnx",
        models_dir=models,
        embedding_model="all-minilm-l6-v2",
        recent_recall_penalty=1.0,
        update_check=False,
        auto_fetch_model=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="the LoCoMo directory (26.json, 30.json, 41.json)"
    )
    parser.add_argument("--asked", default="26", help="the conversation whose questions are asked")
    parser.add_argument("--extra", default="30", help="fills the history up to --rows (never asked about)")
    parser.add_argument("--filler", default="41", help="pads every turn into a long answer")
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--depth", type=int, default=1300, help="characters before the real turn")
    parser.add_argument("--cut", type=int, default=160, help="the short history's row length")
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    load = lambda name: Conversation.load(args.data / f"{name}.json")  # noqa: E731
    asked = load(args.asked)
    rows = long_rows(asked, load(args.extra), load(args.filler), args.rows, args.depth)
    short = [(dia, text[: args.cut], stamp) for dia, text, stamp in turns(asked, load(args.extra), args.rows)]
    questions = asked.real()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        models = args.models_dir or minilm_models_dir(tmp)
        with Memory(settings(tmp, "long", models)) as lm, Memory(settings(tmp, "short", models)) as sm:
            assert lm.wait_until_ready(120) and sm.wait_until_ready(120)
            short_ids, short_store = store_all(sm, short)
            long_ids, long_store = store_all(lm, rows)
            blocks = lm.storage.db.connection().execute("SELECT COUNT(*) FROM memory_blocks").fetchone()[0]
            # What the blocks add to a store: embedding a long row alone vs with its blocks, interleaved.
            embed: dict[str, list[float]] = {"row alone": [], "row and blocks": []}
            for _, content, _ in rows[:: max(1, len(rows) // 50)]:
                for name, run in (
                    ("row alone", lambda c=content: lm.embeddings.embed_documents([c])),
                    ("row and blocks", lambda c=content: embed_with_blocks(lm.embeddings, [c])),
                ):
                    start = time.perf_counter()
                    run()
                    embed[name].append(time.perf_counter() - start)
            for q in questions[:20]:  # warm both (caches, the query kernel's choice)
                lm.recall("a", q["question"], limit=10)
                sm.recall("a", q["question"], limit=10)
            time.sleep(8)  # the query-kernel check settles in the background
            timing: dict[str, list[float]] = {
                "long": [],
                "short": [],
                "long, blocks off": [],
                "short again": [],
            }
            interleaved(questions, {"long": lm, "short": sm}, timing)
            on = quality(lm, questions, long_ids)
            with lm.storage.db.write() as conn:  # blocks off: the memories' own vectors only
                conn.execute("DELETE FROM memory_blocks")
            off = quality(lm, questions, long_ids)
            interleaved(questions, {"long, blocks off": lm, "short again": sm}, timing)
    lat = {name: summary_ms(samples) for name, samples in timing.items()}
    stores = {"long": summary_ms(long_store), "short": summary_ms(short_store)}
    stores.update({f"embed a long {name}": summary_ms(samples) for name, samples in embed.items()})
    ratio = lat["long"]["p50_ms"] / lat["short"]["p50_ms"]
    write_json(
        args.json,
        {
            "machine": machine(),
            "rows": len(rows),
            "blocks": blocks,
            "store_ms": stores,
            "recall_ms": lat,
            "ratio_p50": ratio,
            "quality": {"blocks_on": on, "blocks_off": off},
        },
    )
    chars = sum(len(c) for _, c, _ in rows) / len(rows)
    print(f"{len(rows)} rows (mean {chars:.0f} characters, {blocks} blocks), {len(questions)} questions")
    print_table(
        ["store", "p50 ms", "p95 ms", "mean ms"],
        [[name, s["p50_ms"], s["p95_ms"], s["mean_ms"]] for name, s in stores.items()],
    )
    print_table(
        ["recall (interleaved by twos)", "p50 ms", "p95 ms"],
        [[name, s["p50_ms"], s["p95_ms"]] for name, s in lat.items()],
    )
    print(f"recall p50 long / short: {ratio:.2f}x")
    print_table(
        ["long history", "recall@10", "NDCG@10", "empty"],
        [["blocks on", on["recall@10"], on["ndcg@10"], on["empty"]], ["blocks off", *off.values()]],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
