"""Retrieval quality on LoCoMo conversations: vector only, keyword only and fused, side by side.

    python benchmarks/locomo.py ../shared/data/locomo [--conversations 26 30] [flags] [--json out.json]

Each conversation is stored once through the API (``Memory.store``: content "[<session date>] <speaker>:
<text>", msg_id = the turn's dia_id, timestamp = the session date) into a cached database under
--cache-dir (default $TMPDIR/locomo-lab; delete it to re-ingest). Questions are then answered by the
retrieval lab (benchmarks/research/_locomo_lab.py): the production keyword retriever on that file, the same cosine
the vector index computes, plus the prototypes under study. With no flags the figures equal the API
path's (rrf, depth = limit, vector + trigram). Categories 1-4 only (5 is adversarial).

Metrics per question: recall@k = share of its evidence turns in the top k; hit@1; NDCG@10 (binary);
MRR; empty = no rows returned.

Modes (combinable):
  default     arms table: vector / keyword / fused for the configured decisions, plus today's rrf and rsf.
  --gate-curve  gate off / strict / balanced / lenient: recall@10, NDCG@10, real questions answered empty,
              and NEGATIVE questions (every question of conversation X asked against conversation Y's
              database) answered empty; plus top-cosine / top-fused distributions of the negatives.
  --rotate    choice discipline: for each conversation, pick the best config of the candidate grid on it
              (mean of recall@10 and NDCG@10) and report that config on the other conversations.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py

import _locomo_lab as lab  # noqa: E402
from _common import print_table, write_json  # noqa: E402

METRICS = ["recall@1", "recall@5", "recall@10", "ndcg@10", "mrr", "hit@1", "empty"]


def config_from(args: argparse.Namespace) -> lab.Config:
    weights = tuple((k, float(v)) for k, v in (w.split("=") for w in args.weights)) if args.weights else ()
    return lab.Config(
        channels=tuple(args.channels.split(",")),
        fusion=args.fusion,
        rrf_k=args.rrf_k,
        weights=weights,
        depth=args.depth,
        stopwords=not args.no_stopwords,
        stem=not args.no_stem,
        words_tokenizer=args.words_tokenizer,
        words_replace_trigram=args.words_replace_trigram,
        gate=args.gate,
        calibration_method=args.calibration_method,
        kappa=args.kappa,
    )


def arms(cfg: lab.Config) -> dict[str, lab.Config]:
    keyword = tuple(c for c in cfg.channels if c != lab.VECTOR) or (lab.TRIGRAM,)
    return {
        "vector": lab.with_(cfg, channels=(lab.VECTOR,), gate="off"),
        "keyword": lab.with_(cfg, channels=keyword, gate="off"),
        "fused": lab.with_(cfg, gate="off"),
        "today-rrf": lab.Config(),
        "today-rsf": lab.Config(fusion="rsf"),
    }


def rotation_grid(cfg: lab.Config) -> list[lab.Config]:
    """The candidate configs the rotation chooses among (every fused decision measured in the findings)."""
    grid = []
    for channels in [
        (lab.VECTOR, lab.TRIGRAM),
        (lab.VECTOR, lab.WORDS),
        (lab.VECTOR, lab.TRIGRAM, lab.WORDS),
    ]:
        for fusion in ["rrf", "rsf", "zsf"]:
            for depth in [0, 30, 50]:
                for weight in [0.7, 1.0, 1.5]:
                    weights = () if weight == 1.0 else ((lab.VECTOR, weight),)
                    grid.append(
                        lab.with_(
                            cfg, channels=channels, fusion=fusion, depth=depth, weights=weights, gate="off"
                        )
                    )
    return grid


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--conversations", nargs="*", help="file stems to use (default: all *.json)")
    parser.add_argument("--models-dir", type=Path, help="models dir with the model installed")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "locomo-lab")
    parser.add_argument("--channels", default="vector,trigram", help="comma list of vector,trigram,words")
    parser.add_argument("--fusion", default="rrf", choices=["rrf", "rsf", "zsf", "anchored"])
    parser.add_argument("--rrf-k", type=int, default=60)
    parser.add_argument("--weights", nargs="*", help="per-channel weights, e.g. vector=0.7")
    parser.add_argument("--depth", type=int, default=0, help="per-channel depth before fusion (0 = limit)")
    parser.add_argument("--no-stopwords", action="store_true", help="keep stop words in keyword queries")
    parser.add_argument("--no-stem", action="store_true", help="no light suffix stemming of trigram terms")
    parser.add_argument("--words-tokenizer", default="porter", choices=["porter", "plain"])
    parser.add_argument("--words-replace-trigram", action="store_true")
    parser.add_argument("--gate", default="topcos", choices=["off", "topcos", "evidence", "rowcos", "zq"])
    parser.add_argument(
        "--calibration-method", default="percentile", choices=["separation", "percentile", "zscore"]
    )
    parser.add_argument("--kappa", type=float, help="lexical-coverage rescue level (>1 disables)")
    parser.add_argument("--gate-curve", action="store_true", help="gate levels + negative questions")
    parser.add_argument(
        "--probe-gate", action="store_true", help="probe-calibrated top-cosine gate (≥ 3 conversations)"
    )
    parser.add_argument(
        "--rotate", action="store_true", help="choose on one conversation, confirm on the rest"
    )
    parser.add_argument("--json", help="write the full report here")
    args = parser.parse_args()

    files = sorted(args.data_dir.glob("*.json"))
    if args.conversations:
        files = [f for f in files if f.stem in set(args.conversations)]
    if not files:
        raise SystemExit(f"no conversation files in {args.data_dir}")
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        models_dir = lab.ensure_models(Path(tmp), args.models_dir)
        embed = lab.Embedder(args.cache_dir, models_dir, args.model)
        corpora = {f.stem: lab.load_corpus(f, args.cache_dir, models_dir, args.model, embed) for f in files}
        embed.close()
    the_lab = lab.Lab(corpora)
    names = list(corpora)
    cfg = config_from(args)
    report: dict[str, Any] = {
        "benchmark": "locomo",
        "conversations": names,
        "config": cfg.label(),
        "arms": {},
    }

    print(f"Config: {cfg.label()}   conversations: {', '.join(names)}")
    rows = []
    for arm, arm_cfg in arms(cfg).items():
        per = {n: the_lab.evaluate(arm_cfg, [n]) for n in names}
        overall = the_lab.evaluate(arm_cfg, names)
        report["arms"][arm] = {"config": arm_cfg.label(), "overall": overall, "per_conversation": per}
        rows.append([arm, *(overall[m] for m in METRICS), overall["n"]])
        for n in names:
            rows.append([f"  {arm} @{n}", *(per[n][m] for m in METRICS), per[n]["n"]])
    print_table(["arm", *METRICS, "n"], rows)

    if args.gate_curve:
        gate = args.gate if args.gate != "off" else "topcos"
        curve = []
        print(f"\nGate curve ({gate}, {args.calibration_method}); negatives need ≥ 2 conversations:")
        grows = []
        for level in ["off", "strict", "balanced", "lenient"]:
            level_cfg = (
                lab.with_(cfg, gate="off") if level == "off" else lab.with_(cfg, gate=gate, precision=level)
            )
            for scope in [*names, "all"]:
                use = names if scope == "all" else [scope]
                real = the_lab.evaluate(level_cfg, use)
                neg = (
                    the_lab.negatives(level_cfg, names if scope == "all" else names)
                    if scope == "all"
                    else None
                )
                if scope != "all" and len(names) > 1:
                    neg = negatives_into(the_lab, level_cfg, names, scope)
                entry = {
                    "level": level,
                    "conversation": scope,
                    "recall@10": real["recall@10"],
                    "ndcg@10": real["ndcg@10"],
                    "real_empty": real["empty"],
                    "negative_empty": neg["empty"] if neg else None,
                    "negative_top_cosine": lab.quantiles(neg["top_cosine"]) if neg else None,
                    "negative_top_fused": lab.quantiles(neg["top_fused"]) if neg else None,
                }
                curve.append(entry)
                grows.append(
                    [
                        level,
                        scope,
                        real["recall@10"],
                        real["ndcg@10"],
                        real["empty"],
                        neg["empty"] if neg else float("nan"),
                        neg["n"] if neg else 0,
                    ]
                )
        print_table(
            ["level", "db", "recall@10", "ndcg@10", "real empty", "negative empty", "n negative"], grows
        )
        report["gate_curve"] = curve

    if args.probe_gate:
        report["probe_gate"] = probe_gate(the_lab, cfg, names)

    if args.rotate:
        grid = rotation_grid(cfg)
        per = {c.label(): {n: the_lab.evaluate(c, [n]) for n in names} for c in grid}
        base = lab.Config().label()
        per.setdefault(base, {n: the_lab.evaluate(lab.Config(), [n]) for n in names})
        rot = []
        rrows = []
        for dev in names:
            held = [n for n in names if n != dev]
            best = max(per, key=lambda k: (per[k][dev]["recall@10"] + per[k][dev]["ndcg@10"], k))
            held_best = {
                m: sum(per[best][n][m] * per[best][n]["n"] for n in held)
                / sum(per[best][n]["n"] for n in held)
                for m in ("recall@10", "ndcg@10")
            }
            held_base = {
                m: sum(per[base][n][m] * per[base][n]["n"] for n in held)
                / sum(per[base][n]["n"] for n in held)
                for m in ("recall@10", "ndcg@10")
            }
            rot.append(
                {
                    "dev": dev,
                    "chosen": best,
                    "dev_metrics": per[best][dev],
                    "held_out": held_best,
                    "held_out_today": held_base,
                }
            )
            rrows.append(
                [
                    dev,
                    best,
                    per[best][dev]["recall@10"],
                    per[best][dev]["ndcg@10"],
                    held_best["recall@10"],
                    held_best["ndcg@10"],
                    held_base["recall@10"],
                    held_base["ndcg@10"],
                ]
            )
        print("\nRotation (choose on dev, confirm on the others):")
        print_table(
            [
                "dev",
                "chosen",
                "dev r@10",
                "dev ndcg",
                "held r@10",
                "held ndcg",
                "today held r@10",
                "today held ndcg",
            ],
            rrows,
        )
        report["rotation"] = rot
    write_json(args.json, report)
    return 0


PROBE_PERCENTILE = {"strict": 90.0, "balanced": 75.0, "lenient": 50.0}


def probe_gate(the_lab: lab.Lab, cfg: lab.Config, names: list[str]) -> list[dict[str, Any]]:
    """Gate on the query's top (raw) cosine, threshold = a percentile of the top cosines that PROBE questions
    (those of another conversation) reach in the database; evaluated on the database's real questions and on
    the negatives from the THIRD conversation, so probes and evaluated negatives never overlap."""
    import numpy as np

    def tops(db: str, source: str) -> np.ndarray:
        corpus = the_lab.corpora[db]
        return np.array(
            [corpus.cosine(q.vector).max() for q in the_lab.corpora[source].questions if q.category != 5]
        )

    off_cfg = lab.with_(cfg, gate="off")
    out, rows = [], []
    for level, pct in PROBE_PERCENTILE.items():
        for db in names:
            others = [n for n in names if n != db]
            for probe, held in [(others[0], others[1]), (others[1], others[0])] if len(others) >= 2 else []:
                corpus = the_lab.corpora[db]
                threshold = float(np.percentile(tops(db, probe), pct))
                scored, base = [], []
                for q in corpus.questions:
                    if q.category == 5:
                        continue
                    ranked, _ = the_lab.ranked(corpus, q, off_cfg)
                    base.append(lab.score_question([corpus.dia[r] for r in ranked], q.evidence))
                    if corpus.cosine(q.vector).max() < threshold:
                        ranked = []
                    scored.append(lab.score_question([corpus.dia[r] for r in ranked], q.evidence))
                real, real_off = lab.mean(scored), lab.mean(base)
                neg_empty = float((tops(db, held) < threshold).mean())
                entry = {
                    "level": level,
                    "percentile": pct,
                    "db": db,
                    "probes": probe,
                    "negatives": held,
                    "threshold": threshold,
                    "recall@10": real["recall@10"],
                    "recall@10_off": real_off["recall@10"],
                    "ndcg@10": real["ndcg@10"],
                    "real_empty": real["empty"],
                    "negative_empty": neg_empty,
                }
                out.append(entry)
                rows.append(
                    [
                        level,
                        db,
                        probe,
                        held,
                        threshold,
                        real["recall@10"] - real_off["recall@10"],
                        real["ndcg@10"],
                        real["empty"],
                        neg_empty,
                    ]
                )
    print("\nProbe-calibrated gate (top cosine ≥ percentile of probe questions' top cosine):")
    print_table(
        [
            "level",
            "db",
            "probes",
            "negatives",
            "threshold",
            "Δrecall@10",
            "ndcg@10",
            "real empty",
            "neg empty",
        ],
        rows,
    )
    return out


def negatives_into(the_lab: lab.Lab, cfg: lab.Config, names: list[str], target: str) -> dict[str, Any]:
    """Questions of every other conversation asked against ``target``'s database."""
    empty, n, top_cos, top_fused = 0, 0, [], []
    corpus = the_lab.corpora[target]
    for x in names:
        if x == target:
            continue
        for q in the_lab.corpora[x].questions:
            if q.category == 5:
                continue
            ranked, info = the_lab.ranked(corpus, q, cfg)
            n += 1
            empty += not ranked
            top_cos.append(float(corpus.cosine(q.vector).max()))
            if info.get("top_fused") is not None:
                top_fused.append(info["top_fused"])
    return {"n": n, "empty": empty / n if n else float("nan"), "top_cosine": top_cos, "top_fused": top_fused}


if __name__ == "__main__":
    raise SystemExit(main())
