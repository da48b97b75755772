"""Carry our long-history figures to LongMemEval through two anchors: the original's server and our code
at the round's start, question by question on the same data.

    python benchmarks/research/longchat_anchor.py \
        --set benchmarks/results/longchat-fresh44 ORIGINAL.json START.json OURS.json[@default/uncalibrated] \
        [--set DATA ORIGINAL START OURS ...] [--json out.json]

Each JSON holds per-question rows as ``benchmarks/research/original_longchat.py``,
``benchmarks/longchat.py`` or ``benchmarks/longchat_mcp.py`` write them (``@a/b`` picks the rows of
one arm and state, or one phase, when a file holds several; without it the "settled" phase or the
first entry is read). The round's start is run as a server through ``original_longchat.py --command
WRAPPER`` (a script that starts ``cpersona serve`` with the old tree first on ``PYTHONPATH``).

LongMemEval's questions are, nearly all, ones the original finds: it puts an evidence session in the
top 5 for every one of the issue's 31 and every evidence session in the top 10 for 28. So for each
figure that is a hit or a miss (an evidence session in the top 5, every evidence session in the top
10) this reads how often a server finds a question **where the original finds it** and where it does
not, and carries those rates to LongMemEval's mix: ``rate_found × original + rate_missed × (1 −
original)``. The round's start is the check: the issue measured it on LongMemEval, so the carried
figure should land near what was measured there; where it does, the same carry of ours is the
estimate.

The two graded figures (session NDCG@10, evidence turns in the top 10) have no such split. They are
read on the questions where the original finds every evidence session in the top 10 (most of
LongMemEval's), and a server's misses there (one minus its mean) are scaled to LongMemEval by either
anchor: ``1 − (1 − anchor's figure there) × (server's misses / anchor's misses)``, by the original and
by the round's start. The start carried by the original checks that route as above. Never used to
choose a constant (docs/research/recall-round-three/held-out-estimates.md, "Two anchors, question by
question").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import print_table, write_json  # noqa: E402
from _longchat_data import load  # noqa: E402

#: The issue's LongMemEval-S figures (31 questions; issue 32): the original 2.5.12's server and our
#: code at the round's start (605ce66), default settings through MCP.
LONGMEMEVAL = {
    "original": {"session@5": 1.000, "all@10": 0.903, "ndcg@10": 0.912, "turns@10": 0.793},
    "start": {"session@5": 0.871, "all@10": 0.645, "ndcg@10": 0.801, "turns@10": 0.660},
}
HITS = ("session@5", "all@10")
GRADED = ("ndcg@10", "turns@10")
SERVERS = ("original", "start", "ours")


def question_rows(spec: str) -> dict[str, dict[str, Any]]:
    """Rows by question id from ``FILE[@key/key]``."""
    path, _, keys = spec.partition("@")
    rows: Any = json.loads(Path(path).read_text())["rows"]
    for key in [k for k in keys.split("/") if k]:
        rows = rows[key]
    while isinstance(rows, dict):
        rows = rows["settled"] if "settled" in rows else next(iter(rows.values()))
    return {row["question_id"]: row for row in rows}


def mean(rows: dict[str, dict[str, Any]], ids: list[str], metric: str) -> float:
    """``metric`` averaged over the questions ``ids`` (NaN for none)."""
    return sum(rows[q][metric] for q in ids) / len(ids) if ids else float("nan")


def split_rates(
    server: dict[str, dict[str, Any]], original: dict[str, dict[str, Any]], ids: list[str], metric: str
) -> tuple[float, float, int, int]:
    """How often ``server`` hits ``metric`` where the original does and where it does not; both counts."""
    found = [q for q in ids if original[q][metric] >= 1.0]
    missed = [q for q in ids if original[q][metric] < 1.0]
    return mean(server, found, metric), mean(server, missed, metric), len(found), len(missed)


def carried(found_rate: float, missed_rate: float, original_there: float) -> float:
    """The figure a server would read where the original reads ``original_there``."""
    if original_there >= 1.0:
        return found_rate
    return found_rate * original_there + missed_rate * (1.0 - original_there)


def scaled_misses(server_mean: float, anchor_mean: float, anchor_there: float) -> float:
    """A graded figure carried by an anchor: the server's misses in proportion to the anchor's."""
    if anchor_mean >= 1.0:
        return float("nan")
    return 1.0 - (1.0 - anchor_there) * (1.0 - server_mean) / (1.0 - anchor_mean)


def graded_table(servers: dict[str, dict[str, dict[str, Any]]], ids: list[str]) -> list[list[Any]]:
    """Per server and graded figure: its mean where the original finds every evidence session, and
    that carried to LongMemEval by the original and by the round's start."""
    where = [q for q in ids if servers["original"][q]["all@10"] >= 1.0]
    means = {(name, metric): mean(rows, where, metric) for name, rows in servers.items() for metric in GRADED}
    table = []
    for name in servers:
        for metric in GRADED:
            by = {
                anchor: scaled_misses(means[name, metric], means[anchor, metric], LONGMEMEVAL[anchor][metric])
                for anchor in ("original", "start")
            }
            measured = LONGMEMEVAL.get(name, {}).get(metric)
            table.append(
                [
                    name,
                    metric,
                    round(means[name, metric], 3),
                    len(where),
                    round(by["original"], 3),
                    round(by["start"], 3),
                    "" if measured is None else measured,
                ]
            )
    return table


def pooled(sets: list[list[str]]) -> tuple[dict[str, dict[str, dict[str, Any]]], list[str]]:
    """Every server's rows by ``DATA#question id`` over ``sets`` (DATA, ORIGINAL, START, OURS), and the
    ids every server answered, in the data's order."""
    servers: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in SERVERS}
    ids: list[str] = []
    for data, *specs in sets:
        rows = {name: question_rows(spec) for name, spec in zip(SERVERS, specs, strict=True)}
        for history in load(Path(data), "all"):
            for question in history["questions"]:
                if all(question["question_id"] in r for r in rows.values()):
                    key = f"{data}#{question['question_id']}"
                    ids.append(key)
                    for name in SERVERS:
                        servers[name][key] = rows[name][question["question_id"]]
    return servers, ids


def hit_table(
    servers: dict[str, dict[str, dict[str, Any]]], ids: list[str]
) -> tuple[list[list[Any]], dict[str, Any]]:
    """Per server and hit-or-miss figure: its mean here, its rates where the original finds and misses,
    and those carried to LongMemEval; the same as JSON."""
    table: list[list[Any]] = []
    out: dict[str, Any] = {}
    for name, rows in servers.items():
        for metric in HITS:
            found, missed, n_found, n_missed = split_rates(rows, servers["original"], ids, metric)
            here = mean(rows, ids, metric)
            estimate = carried(found, missed, LONGMEMEVAL["original"][metric])
            measured = LONGMEMEVAL.get(name, {}).get(metric)
            table.append(
                [
                    name,
                    metric,
                    round(here, 3),
                    f"{found:.3f} ({n_found})",
                    f"{missed:.3f} ({n_missed})",
                    round(estimate, 3),
                    "" if measured is None else measured,
                ]
            )
            out[f"{name}/{metric}"] = {
                "mean": here,
                "where_found": found,
                "where_missed": missed,
                "carried": estimate,
                "longmemeval": measured,
            }
    return table, out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--set",
        nargs=4,
        action="append",
        required=True,
        metavar=("DATA", "ORIGINAL", "START", "OURS"),
        help="one data set (longchat.json or its dir) and the three servers' rows on it; repeat to pool",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    servers, ids = pooled(args.set)
    print(f"{len(ids)} questions every server answered, {len(args.set)} data set(s)")
    table, out = hit_table(servers, ids)
    print_table(
        [
            "server",
            "figure",
            "here",
            "where the original finds (n)",
            "where it misses (n)",
            "carried to LongMemEval",
            "measured there",
        ],
        table,
    )
    graded = graded_table(servers, ids)
    print()
    print_table(
        [
            "server",
            "figure",
            "where the original finds every session",
            "n",
            "carried by the original",
            "carried by the start",
            "measured there",
        ],
        graded,
    )
    out["graded"] = {
        f"{row[0]}/{row[1]}": {"mean": row[2], "by_original": row[4], "by_start": row[5]} for row in graded
    }
    write_json(args.json, {"sets": [s[0] for s in args.set], "questions": len(ids), "figures": out})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
