"""Recall speed on a long user–assistant history over MCP stdio: our server and the original's, long
turns and the same turns cut short, answers interleaved (issue 32's speed bar).

    python benchmarks/longchat_speed.py benchmarks/results/longchat-multi --models-dir DIR \
        [--original VENV/bin/cpersona] [--histories 1] [--cut 160] [--rounds 3] [--json out.json]

Per history, four servers at once, each on a fresh SQLite file and spoken to by a raw JSON-RPC client
(no output-schema checks: the server's time, as the issue measures it): ours on the long turns, ours on
the turns cut to ``--cut`` characters, and, with ``--original``, the original CPersona's server on
both. Every turn is stored as ``"<role>: <text>"`` with its message id and time, as
``longchat.py`` and ``research/original_longchat.py`` store it. The original embeds with the same
MiniLM through our ``cpersona embed-server`` contract, served from this process
(``CPERSONA_EMBEDDING_MODE=http``); ours embeds in-process with its defaults. Once every server is
settled (ours: a recall reports the calibrated gate, or the floor it keeps for long records; the
original: its write queue is empty) and all have idled ``--idle`` seconds more (the original calibrates
in the background after its stores), every question of the history is asked of each server in turn,
the order rotated per question, ``--rounds`` times; each recall is timed from the request's write to its reply. Printed: p50 / p95 per server and
the two ratios the issue names (ours long against the original long; ours long against ours cut).
Every round asks the same texts: both servers keep recent query vectors (the original 256 texts for
300 s, ours 256: ``CPERSONA_EMBEDDING_CACHE_SIZE``), so after the first round both answer without
embedding the query; ``longchat_ab.py`` asks each round's questions afresh.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "research"))

from _common import env_pairs, percentile, print_table, summary_ms, write_json  # noqa: E402
from _rpc import cpersona_executable  # noqa: E402
from latency import env_for  # noqa: E402
from longchat import LIMIT, gate_settled, load  # noqa: E402
from original_japanese import Client  # noqa: E402
from original_longchat import AGENT, embedding_server, original_env, settle, store_history  # noqa: E402


def settle_ours(client: Client, wait_s: float) -> float | None:
    """Seconds until a recall reports a settled gate, or None after ``wait_s``: calibrated, or the
    heuristic floor that self-calibration chose for an agent of long records (docs/quality-gate.md#long-records-and-the-gate)."""
    started = time.monotonic()
    while time.monotonic() - started < wait_s:
        if gate_settled(client.tool("recall", {"agent_id": AGENT, "query": "warm up", "limit": LIMIT})):
            return round(time.monotonic() - started, 1)
        time.sleep(0.5)
    return None


def servers(
    tmp: Path,
    models_dir: Path,
    original: str | None,
    embed_url: str | None,
    cut: int,
    ours_env: dict[str, str] | None = None,
) -> dict[str, tuple[Client, int | None, str]]:
    """name -> (client, cut, kind); every server started before any is fed."""
    out: dict[str, tuple[Client, int | None, str]] = {}
    for name, length in (("ours long", None), (f"ours cut {cut}", cut)):
        env = {**env_for(tmp / f"{name.replace(' ', '-')}.db", models_dir, "onnx"), **(ours_env or {})}
        out[name] = (Client([cpersona_executable(), "serve"], env), length, "ours")
    if original and embed_url:
        for name, length in (("original long", None), (f"original cut {cut}", cut)):
            env = original_env(tmp / f"{name.replace(' ', '-')}.db", embed_url)
            out[name] = (Client([original], env), length, "original")
    return out


def feed(
    running: dict[str, tuple[Client, int | None, str]], history: dict[str, Any], settle_wait: float
) -> list[dict[str, Any]]:
    """Store ``history`` in every server and wait until each is settled; how long each step took."""
    out = []
    for name, (client, length, kind) in running.items():
        started = time.monotonic()
        store_history(client, history, length)
        stored_s = round(time.monotonic() - started, 1)
        wait = settle_ours if kind == "ours" else settle
        out.append(
            {
                "history": history["history_id"],
                "server": name,
                "store_s": stored_s,
                "settled_after_s": wait(client, settle_wait),
            }
        )
        print(f"  {history['history_id']} {name}: {out[-1]}", file=sys.stderr)
    return out


def time_recalls(
    running: dict[str, tuple[Client, int | None, str]],
    history: dict[str, Any],
    rounds: int,
    samples: dict[str, list[float]],
) -> None:
    """Every question asked of each server in turn, the order rotated per question, ``rounds`` times."""
    names = list(running)
    for round_ in range(rounds):
        for n, question in enumerate(history["questions"]):
            shift = (n + round_) % len(names)
            for name in names[shift:] + names[:shift]:
                client = running[name][0]
                begin = time.perf_counter()
                client.tool("recall", {"agent_id": AGENT, "query": question["question"], "limit": LIMIT})
                samples.setdefault(name, []).append(time.perf_counter() - begin)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="longchat.json or the cache dir holding it")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--original", help="the original CPersona's executable (PyPI cpersona==2.5.12)")
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="choose")
    parser.add_argument("--histories", type=int, default=1)
    parser.add_argument("--cut", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle-wait", type=float, default=300.0)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds every server idles before timing")
    parser.add_argument(
        "--ours-env",
        nargs="*",
        default=[],
        help="CPERSONA_X=v settings of our servers (e.g. CPERSONA_EMBEDDING_CACHE_SIZE=0: every query embedded)",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    histories = load(args.data, args.split)[: args.histories]
    samples: dict[str, list[float]] = {}
    settled: list[dict[str, Any]] = []
    ours_env = env_pairs(args.ours_env)
    with ExitStack() as stack:
        url = stack.enter_context(embedding_server(args.models_dir, args.model)) if args.original else None
        for history in histories:
            with tempfile.TemporaryDirectory() as tmp:
                running = servers(Path(tmp), args.models_dir, args.original, url, args.cut, ours_env)
                try:
                    settled += feed(running, history, args.settle_wait)
                    # The original calibrates in the background after its stores; a server fed first
                    # would otherwise have had longer to settle than the one fed last.
                    time.sleep(args.idle)
                    time_recalls(running, history, args.rounds, samples)
                finally:
                    for client, _, _ in running.values():
                        client.close()
    rows = [[name, *(summary_ms(s)[k] for k in ("p50_ms", "p95_ms")), len(s)] for name, s in samples.items()]
    print(
        f"\n{len(histories)} histories, split {args.split}, {args.rounds} rounds, recall as the client sees it"
    )
    print_table(["server", "p50 ms", "p95 ms", "n"], rows)
    p50 = {name: percentile(s, 50) for name, s in samples.items()}
    ratios = {f"ours long / ours cut {args.cut}": p50["ours long"] / p50[f"ours cut {args.cut}"]}
    if "original long" in p50:
        ratios["ours long / original long"] = p50["ours long"] / p50["original long"]
        ratios[f"original long / original cut {args.cut}"] = (
            p50["original long"] / p50[f"original cut {args.cut}"]
        )
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x")
    write_json(
        args.json,
        {"settled": settled, "ratios": ratios, "servers": {n: summary_ms(s) for n, s in samples.items()}},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
