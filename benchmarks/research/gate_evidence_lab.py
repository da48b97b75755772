"""How much of the gate's evidence can come from the part of a query that is not a known name (issue 19, point 7).

    python benchmarks/research/gate_evidence_lab.py ../shared/data/locomo --models-dir DIR [--json out.json]

Per conversation (its cached database, ``_heldout_cache``): the corpus's names
(``cpersona.retrieval.entities.corpus_entities`` on its rows), then for every query its top cosine
over the corpus twice — as written, and with the names masked (``entities.mask``). The gate's
evidence is the mix ``(1 - w) · full + w · masked``; the threshold is a percentile of the same mix
over the shipped probe questions (treated the same way: see ``--probes``). Reported per w and
percentile: real questions (categories 1-4) below the threshold, negatives (the next
conversation's questions) below it, and renamed negatives (the same with that conversation's
speakers renamed to this one's) below it. "Below" = answered empty, before the exact-match rescue
(natural questions rarely have an identifier-like token; the product benchmark measures the rest).

Probe treatments (``--probes``): ``asis`` (probes masked with the corpus's names: their invented
names stay), ``own`` (each probe's own mid-sentence Title-case words masked too, so masked probes
and masked questions both lose their names), ``renamed`` (the probes' names replaced by the corpus's,
cycling, and not masked: the null then carries the same name lift).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import print_table, write_json  # noqa: E402
from _heldout_cache import AGENT, QueryVectors, cached_memory, ensure_database  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402

from cpersona.retrieval import calibration as cal  # noqa: E402
from cpersona.retrieval import evidence as ev  # noqa: E402
from cpersona.retrieval.context import ContextPolicy  # noqa: E402
from cpersona.retrieval.entities import corpus_entities, mask  # noqa: E402
from cpersona.retrieval.gate import GateDecision, GateEvidence  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.values import MEMORIES  # noqa: E402

MIXES = (0.0, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0)
PERCENTILES = (75.0, 90.0, 95.0)
_MID_NAME = re.compile(r"(?<=[\w,] )[A-Z][a-z]+(?:['’]s)?")


def probe_names(text: str) -> list[str]:
    """A probe's own Title-case words after the first word (its invented people and places)."""
    return [re.sub(r"['’]s$", "", m.group()) for m in _MID_NAME.finditer(text)]


def renamed_probe(text: str, names: list[str], offset: int) -> str:
    """The probe with its invented names replaced by the corpus's names (cycling from ``offset``)."""
    own = probe_names(text)
    if not own or not names:
        return text
    mapping = {n: names[(offset + i) % len(names)] for i, n in enumerate(dict.fromkeys(own))}
    return re.sub(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b", lambda m: mapping[m.group(1)], text)


WEIGHTS = (0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
COVERAGE_PERCENTILES = (75.0, 80.0, 85.0, 90.0, 95.0)


class RecordingGate:
    """A gate stage that passes everything and records each query's evidence for every weight (the
    product's ``EvidenceRecorder`` records one)."""

    def __init__(self, lexicon: ev.Lexicon) -> None:
        self.lexicon = lexicon
        self.values: list[dict[float, float]] = []

    def apply(self, rows: list[Any], request: Any, evidence: GateEvidence) -> GateDecision:
        self.values.append({w: evidence.of_rows(rows, request.query, self.lexicon, w)[0] for w in WEIGHTS})
        return GateDecision(rows, {"kind": "off"})


def coverage_curve(mem: Any, sets: dict[str, list[str]], probes: list[str]) -> dict[str, Any]:
    """Per weight and percentile: the share of each query set whose evidence is below the probes'."""
    texts = [r["content"] for r in mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)]
    lexicon = ev.build_lexicon(texts)
    values: dict[str, list[dict[float, float]]] = {}
    for name, questions in {"probes": probes, **sets}.items():
        gate = RecordingGate(lexicon)
        mem.recaller.pipeline = RecallPipeline(
            mem.settings, gate=gate, context_policy=ContextPolicy(**CONTEXT)
        )
        for q in questions:
            mem.recall(AGENT, q, limit=10, record=False)
        values[name] = gate.values
    curve = []
    for w in WEIGHTS:
        for q in COVERAGE_PERCENTILES:
            t = float(np.percentile([v[w] for v in values["probes"]], q))
            curve.append(
                {
                    "weight": w,
                    "percentile": q,
                    "threshold": round(t, 4),
                    **{f"{k}_empty": float(np.mean([v[w] < t for v in values[k]])) for k in sets},
                }
            )
    return {"entities": list(lexicon.entities), "lexicon_words": len(lexicon.frequent), "curve": curve}


#: The context channel as the research found it (heldout_lab.py): on while the gate is measured.
CONTEXT = {"parents": 5, "weight": 0.6, "reach": 2}


def tops(mem: Any, queries: QueryVectors, corpus: np.ndarray, texts: list[str]) -> np.ndarray:
    vectors = np.vstack([queries.get(mem, t) for t in texts])
    return (vectors @ corpus.T).max(axis=1)


def print_coverage(report: dict[str, Any]) -> None:
    """One row per (weight, percentile): mean over conversations, then each conversation."""
    convs = report["per_conversation"]
    keys = [(p["weight"], p["percentile"]) for p in next(iter(convs.values()))["curve"]]
    rows = []
    for i, (w, q) in enumerate(keys):
        points = {name: entry["curve"][i] for name, entry in convs.items()}
        mean = {
            k: float(np.mean([p[f"{k}_empty"] for p in points.values()]))
            for k in ("real", "negative", "renamed")
        }
        rows.append(
            [
                w,
                f"p{q:.0f}",
                mean["real"],
                mean["negative"],
                mean["renamed"],
                " ".join(
                    f"{n}:{p['real_empty']:.3f}/{p['negative_empty']:.2f}/{p['renamed_empty']:.2f}"
                    for n, p in points.items()
                ),
            ]
        )
    print(
        "answered empty (before the exact-match rescue), mean of conversations; per conversation real/neg/renamed"
    )
    print_table(["weight", "pct", "real", "negative", "renamed", "per conversation"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/qlab/cache"))
    parser.add_argument("--probes", default="asis,own,renamed")
    parser.add_argument("--replacement", default="", help="what a masked name becomes (default: nothing)")
    parser.add_argument("--curve", choices=("mask", "coverage"), default="mask")
    parser.add_argument("--json")
    args = parser.parse_args()
    files = conversation_files(args.data_dir, None)
    convs = [Conversation.load(p) for p in files]
    queries = QueryVectors(args.cache_dir / "queries.npz")
    probes = cal.probe_questions()
    report: dict[str, Any] = {"per_conversation": {}}
    rows_out = []
    for index, conv in enumerate(convs):
        other = convs[(index + 1) % len(convs)]
        db = ensure_database(args.cache_dir, conv, args.models_dir)
        with cached_memory(db, args.models_dir, queries) as mem:
            with mem.storage.read() as session:
                ids, corpus = session.vector_search.agent_vectors(
                    MEMORIES, mem.embeddings.model_id, mem.embeddings.dimension, AGENT
                )
            texts = [r["content"] for r in mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)]
            names = corpus_entities(texts)
            sets = {
                "real": [q["question"] for q in conv.real()],
                "negative": other.negatives_for(conv),
                "renamed": other.renamed_negatives_for(conv),
            }
            if args.curve == "coverage":
                report["per_conversation"][conv.name] = coverage_curve(mem, sets, probes)
                continue
            full = {k: tops(mem, queries, corpus, v) for k, v in sets.items()}
            masked = {
                k: tops(mem, queries, corpus, [mask(t, names, args.replacement) for t in v])
                for k, v in sets.items()
            }
            probe_sets: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for kind in args.probes.split(","):
                if kind == "asis":
                    p_full = tops(mem, queries, corpus, probes)
                    p_mask = tops(mem, queries, corpus, [mask(t, names, args.replacement) for t in probes])
                elif kind == "own":
                    p_full = tops(mem, queries, corpus, probes)
                    p_mask = tops(
                        mem,
                        queries,
                        corpus,
                        [mask(t, [*names, *probe_names(t)], args.replacement) for t in probes],
                    )
                elif kind == "renamed":
                    renamed = [renamed_probe(t, names, i) for i, t in enumerate(probes)]
                    p_full = tops(mem, queries, corpus, renamed)
                    p_mask = tops(mem, queries, corpus, [mask(t, names, args.replacement) for t in renamed])
                else:
                    raise SystemExit(f"unknown probe treatment {kind!r}")
                probe_sets[kind] = (p_full, p_mask)
            entry: dict[str, Any] = {"entities": names, "curve": []}
            for kind, (p_full, p_mask) in probe_sets.items():
                for w in MIXES:
                    probe_e = (1 - w) * p_full + w * p_mask
                    ev = {k: (1 - w) * full[k] + w * masked[k] for k in sets}
                    for q in PERCENTILES:
                        t = float(np.percentile(probe_e, q))
                        point = {
                            "probes": kind,
                            "mix": w,
                            "percentile": q,
                            "threshold": round(t, 4),
                            **{f"{k}_empty": float((ev[k] < t).mean()) for k in sets},
                        }
                        entry["curve"].append(point)
            report["per_conversation"][conv.name] = entry
            print(f"{conv.name}: names {names}", file=sys.stderr)
    if args.curve == "coverage":
        print_coverage(report)
        write_json(args.json, {"benchmark": "gate_evidence_lab", "curve": "coverage", **report})
        return 0
    # overall (question-weighted over conversations) per (probes, mix, percentile)
    keys = sorted(
        {
            (p["probes"], p["mix"], p["percentile"])
            for e in report["per_conversation"].values()
            for p in e["curve"]
        }
    )
    overall = []
    for key in keys:
        points = [
            (name, p)
            for name, e in report["per_conversation"].items()
            for p in e["curve"]
            if (p["probes"], p["mix"], p["percentile"]) == key
        ]
        row: dict[str, Any] = {"probes": key[0], "mix": key[1], "percentile": key[2]}
        for k in ("real", "negative", "renamed"):
            row[f"{k}_empty"] = float(np.mean([p[f"{k}_empty"] for _, p in points]))
            row[f"{k}_per_conv"] = {name: round(p[f"{k}_empty"], 3) for name, p in points}
        overall.append(row)
        rows_out.append(
            [
                key[0],
                key[1],
                f"p{key[2]:.0f}",
                row["real_empty"],
                row["negative_empty"],
                row["renamed_empty"],
                " ".join(
                    f"{n}:{p['real_empty']:.3f}/{p['negative_empty']:.2f}/{p['renamed_empty']:.2f}"
                    for n, p in points
                ),
            ]
        )
    report["overall"] = overall
    print("answered empty (before the exact-match rescue); per conversation real/negative/renamed")
    print_table(["probes", "mix", "pct", "real", "negative", "renamed", "per conversation"], rows_out)
    write_json(args.json, {"benchmark": "gate_evidence_lab", **report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
