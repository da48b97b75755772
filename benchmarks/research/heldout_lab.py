"""Held-out retrieval research (issue 19, point 6): candidate channels through the real pipeline.

    python benchmarks/research/heldout_lab.py ../shared/data/locomo --models-dir DIR \\
        --config base --config "ctx3=context:parents=3,weight=0.3" [--choose-on 41] [--json out.json]

Each conversation is stored once (``_heldout_cache``); every config runs the product pipeline
(``RecallPipeline`` with the default settings, fused rsf, gate off) over every real question, with
an optional candidate stage. Reports recall@10 / NDCG@10 per conversation and per category, and,
with ``--choose-on``, the configs' ranking on those conversations next to the rest (choose on one
part, confirm on the other: a gain only where chosen is not a gain).

Config syntax: ``name=stage:key=value,key=value`` with stage ``context`` (``ContextPolicy`` fields);
``base`` is the product as shipped.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import fields
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import data_models_parser, print_table, write_json  # noqa: E402
from _heldout_cache import AGENT, QueryVectors, cached_memory, ensure_database  # noqa: E402
from _locomo_data import CATEGORY_NAMES, Conversation, conversation_files  # noqa: E402
from _retrieval_metrics import score_question  # noqa: E402

from cpersona.retrieval.context import ContextPolicy  # noqa: E402
from cpersona.retrieval.pipeline import NoGate, RecallPipeline  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

METRICS = ("recall@10", "ndcg@10")


def parse_config(spec: str) -> tuple[str, dict[str, Any]]:
    """'name=stage:k=v,k=v' → (name, {stage: {k: v}}); 'base' → ('base', {})."""
    if "=" not in spec.split(":")[0]:
        return spec, {}
    name, rest = spec.split("=", 1)
    out: dict[str, Any] = {}
    for part in rest.split(";"):
        stage, _, args = part.partition(":")
        values: dict[str, Any] = {}
        for item in filter(None, args.split(",")):
            key, _, raw = item.partition("=")
            values[key] = _value(raw)
        out[stage] = values
    return name, out


def _value(raw: str) -> Any:
    if raw in ("true", "false"):
        return raw == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def pipeline_for(settings: Any, config: dict[str, Any]) -> RecallPipeline:
    """The product pipeline (gate off) with the config's candidate stages."""
    policy = None
    if "context" in config:
        known = {f.name for f in fields(ContextPolicy)}
        unknown = set(config["context"]) - known
        if unknown:
            raise SystemExit(f"unknown context keys: {', '.join(sorted(unknown))}")
        policy = ContextPolicy(**config["context"])
    return RecallPipeline(settings, gate=NoGate("research: gate off"), context_policy=policy)


def evaluate(mem: Any, conv: Conversation, config: dict[str, Any]) -> list[tuple[int, dict[str, float]]]:
    """(category, metrics) for every real question of ``conv``."""
    rows = mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)
    id_to_dia = {r["id"]: r["msg_id"] for r in rows}
    mem.recaller.pipeline = pipeline_for(mem.settings, config)
    out = []
    for qa in conv.real():
        results = mem.recall(AGENT, qa["question"], limit=10, record=False)["results"]
        ranked = [id_to_dia.get(r["id"], "") for r in reversed(results) if r["type"] == "memory"]
        out.append((int(qa["category"]), score_question(ranked, [e for e in qa["evidence"] if e])))
    return out


def mean_of(rows: list[dict[str, float]]) -> dict[str, float]:
    n = len(rows) or 1
    return {m: sum(r[m] for r in rows) / n for m in METRICS} | {"n": len(rows)}


def rotation(
    results: dict[str, dict[str, list[tuple[int, dict[str, float]]]]], convs: list[str]
) -> dict[str, dict[str, Any]]:
    """Per dev conversation: the config best on it (recall@10 + NDCG@10) and its figures on the rest."""
    out: dict[str, dict[str, Any]] = {}
    for dev in convs:
        rest = [c for c in convs if c != dev]

        def score(name: str, dev: str = dev) -> float:
            m = mean_of([q for _, q in results[name][dev]])
            return m["recall@10"] + m["ndcg@10"]

        best = max(results, key=lambda n: (score(n), n == "base"))
        out[dev] = {
            "chosen": best,
            "dev": mean_of([q for _, q in results[best][dev]]),
            "held_out": mean_of([q for c in rest for _, q in results[best][c]]),
            "base_held_out": mean_of([q for c in rest for _, q in results["base"][c]])
            if "base" in results
            else None,
        }
    return out


def main() -> int:
    parser = data_models_parser(__doc__, model=False)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/qlab/cache"))
    parser.add_argument("--conversations", nargs="+")
    parser.add_argument("--config", action="append", default=[], help="repeatable; see the module doc")
    parser.add_argument("--choose-on", nargs="+", default=[], help="conversations the choice is made on")
    parser.add_argument("--categories", action="store_true", help="print per-category tables")
    parser.add_argument(
        "--rotate",
        action="store_true",
        help="choose the best config (recall@10 + NDCG@10) on each conversation, report it on the others",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    configs = dict(parse_config(s) for s in (args.config or ["base"]))
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    queries = QueryVectors(args.cache_dir / "queries.npz")
    results: dict[str, dict[str, list[tuple[int, dict[str, float]]]]] = defaultdict(dict)
    for path in conversation_files(args.data_dir, args.conversations):
        conv = Conversation.load(path)
        db = ensure_database(args.cache_dir, conv, args.models_dir)
        with cached_memory(db, args.models_dir, queries) as mem:
            for name, config in configs.items():
                results[name][conv.name] = evaluate(mem, conv, config)
    report: dict[str, Any] = {"configs": {n: str(c) for n, c in configs.items()}, "results": {}}
    convs = sorted({c for by in results.values() for c in by})
    chosen = [c for c in convs if c in args.choose_on]
    confirm = [c for c in convs if c not in args.choose_on]
    table = []
    for name in configs:
        by_conv = results[name]
        entry: dict[str, Any] = {c: mean_of([m for _, m in by_conv[c]]) for c in convs}
        entry["all"] = mean_of([m for c in convs for _, m in by_conv[c]])
        if chosen:
            entry["chosen"] = mean_of([m for c in chosen for _, m in by_conv[c]])
            entry["confirm"] = mean_of([m for c in confirm for _, m in by_conv[c]])
        cats: dict[str, dict[str, float]] = {}
        for cat in sorted({k for c in convs for k, _ in by_conv[c]}):
            cats[CATEGORY_NAMES[cat]] = mean_of([m for c in convs for k, m in by_conv[c] if k == cat])
        entry["categories"] = cats
        report["results"][name] = entry
        scopes = [*convs, "all", *(["chosen", "confirm"] if chosen else [])]
        table.append([name, *(f"{entry[s]['recall@10']:.3f}/{entry[s]['ndcg@10']:.3f}" for s in scopes)])
    scopes = [
        *convs,
        "all",
        *([f"chosen {'+'.join(chosen)}", f"confirm {'+'.join(confirm)}"] if chosen else []),
    ]
    print("recall@10 / NDCG@10 (categories 1-4)")
    print_table(["config", *scopes], table)
    if args.categories:
        cat_names = list(next(iter(report["results"].values()))["categories"])
        print("\nper category, all conversations")
        print_table(
            ["config", *cat_names],
            [
                [
                    n,
                    *(
                        f"{e['categories'][c]['recall@10']:.3f}/{e['categories'][c]['ndcg@10']:.3f}"
                        for c in cat_names
                    ),
                ]
                for n, e in report["results"].items()
            ],
        )
    if args.rotate:
        report["rotation"] = rotation(results, convs)
        print("\nrotation: chosen on one conversation, reported on the others (question-weighted)")
        print_table(
            ["dev", "chosen", "dev r/ndcg", "held-out r/ndcg", "base held-out"],
            [
                [
                    dev,
                    r["chosen"],
                    f"{r['dev']['recall@10']:.3f}/{r['dev']['ndcg@10']:.3f}",
                    f"{r['held_out']['recall@10']:.3f}/{r['held_out']['ndcg@10']:.3f}",
                    f"{r['base_held_out']['recall@10']:.3f}/{r['base_held_out']['ndcg@10']:.3f}"
                    if r["base_held_out"]
                    else "",
                ]
                for dev, r in report["rotation"].items()
            ],
        )
    write_json(args.json, {"benchmark": "heldout_lab", **report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
