"""Japanese paragraphs keyword-only on PostgreSQL, with and without the character-pair re-ranking.

    python benchmarks/research/japanese_postgres.py DATA [--db-url URL|auto]

DATA as for benchmarks/japanese.py (japanese.json or its cache dir). Every paragraph is stored into one
fresh PostgreSQL database (``auto``: a throwaway pgserver cluster), keyword-only; each question of
both halves is recalled with limit 10, not recorded (so the two passes see the same rows), first as
shipped, then with ``retrieval/pair_rescore.pieces`` answering nothing (the trigram ranking alone).
Prints hit@1 and MRR per half. Checks that the re-ranking, chosen on SQLite, holds on the other engine
(docs/research/recall-round-three/japanese.md#character-pairs-for-japanese).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import japanese  # noqa: E402
from _japanese_data import load  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

import cpersona.retrieval.pair_rescore as pair_rescore  # noqa: E402
from cpersona.config import Settings  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path)
    parser.add_argument("--db-url", default="auto", help="an admin URL to create a database with, or auto")
    args = parser.parse_args()
    data = load(args.data)
    shipped = pair_rescore.pieces
    with (
        postgres_admin_url(None if args.db_url == "auto" else args.db_url) as admin,
        fresh_database(admin, "cpersona_japanese_lab") as url,
    ):
        settings = Settings(
            db_path=Path("unused.db"),
            db_url=url,
            embedding_mode="none",
            update_check=False,
            auto_fetch_model=False,
            auto_calibrate=False,
        )
        japanese.store(data["paragraphs"], settings)
        for label, pieces in (("pairs", shipped), ("trigram only", lambda query: ())):
            pair_rescore.pieces = pieces  # type: ignore[assignment]
            with japanese._memory(settings) as mem:
                rows = mem.storage.session().memories.list_recent(Scope(japanese.AGENT), 10**9)
                para_of = {r["id"]: r["msg_id"] for r in rows}
                for half in ("choose", "confirm"):
                    scored = []
                    for q in (q for q in data["questions"] if q["split"] == half):
                        results = mem.recall(japanese.AGENT, q["question"], limit=10, record=False)["results"]
                        ranked = [
                            para_of.get(r["id"], "") for r in reversed(results) if r.get("type") == "memory"
                        ]
                        scored.append(japanese.score(ranked, q["gold"]))
                    n = max(1, len(scored))
                    hit = sum(s["hit@1"] for s in scored) / n
                    mrr = sum(s["mrr"] for s in scored) / n
                    print(
                        f"{label:>12}  {half:<7}  hit@1 {hit:.3f}  MRR {mrr:.3f}  n {len(scored)}", flush=True
                    )
        pair_rescore.pieces = shipped
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
