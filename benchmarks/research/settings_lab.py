"""Settings variants side by side on LoCoMo conversations, each database built once.

    python benchmarks/research/settings_lab.py ../shared/data/locomo --models-dir DIR \
        --variant base: --variant div85:session_diversity=0.85 [--conversations 26 30] [--gate]

Each ``--variant NAME:key=value,...`` is a set of ``Settings`` overrides (field names, not variable
names) applied to the production pipeline; the quality gate is off unless ``--gate`` (then the agent
is calibrated once, as self-calibration does, and the production gate runs). Prints recall@10 /
NDCG@10 per category and per conversation for every variant, and the paired per-question
differences against the first variant (how many questions got better / worse), so a choice can be
made on some conversations and confirmed on the others.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import data_models_parser, model_memory, print_table  # noqa: E402
from _locomo_data import CATEGORY_NAMES, Conversation, conversation_files  # noqa: E402
from _retrieval_metrics import score_question  # noqa: E402

from cpersona.retrieval.pipeline import RecallPipeline  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

LIMIT = 10


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``name:key=value,key=value`` → (name, overrides) with values parsed as float/int/bool/str."""
    name, _, body = text.partition(":")
    overrides: dict[str, Any] = {}
    for part in filter(None, body.split(",")):
        key, _, raw = part.partition("=")
        value: Any = raw
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            try:
                value = int(raw) if raw.isdigit() else float(raw)
            except ValueError:
                value = raw
        overrides[key.strip()] = value
    return name, overrides


def main() -> int:
    parser = data_models_parser(__doc__)
    parser.add_argument("--conversations", nargs="*", default=None)
    parser.add_argument("--variant", action="append", default=[], help="name:key=value,...")
    parser.add_argument("--gate", action="store_true", help="calibrate and run the production gate")
    parser.add_argument(
        "--record",
        action="store_true",
        help="recall as an agent does (record=True: the recent-recall penalty sees earlier questions' rows)",
    )
    args = parser.parse_args()
    variants = [parse_variant(v) for v in (args.variant or ["base:"])]
    files = conversation_files(args.data_dir, args.conversations)
    scores: dict[str, dict[tuple[str, int], dict[str, float]]] = defaultdict(dict)
    categories: dict[tuple[str, int], int] = {}
    empties: dict[str, int] = defaultdict(int)
    for path in files:
        data = Conversation.load(path)
        with model_memory(
            args.models_dir,
            args.model,
            recent_recall_penalty=1.0,
            embed_query_kernel=os.environ.get("LAB_KERNEL", "exact"),
        ) as mem:
            settings = mem.settings
            for dia_id, content, stamp in data.turns():
                mem.store("locomo", content, msg_id=dia_id, timestamp=stamp)
            rows = mem.storage.session().memories.list_recent(Scope("locomo"), 10**9)
            id_to_dia = {r["id"]: r["msg_id"] for r in rows}
            if args.gate:
                mem.calibrate_threshold("locomo")
            for name, overrides in variants:
                arm = settings.with_overrides(**overrides)
                gate = mem.calibration.gate() if args.gate else None
                mem.recaller.pipeline = RecallPipeline(arm, gate=gate)
                mem.recaller.settings = arm
                for number, qa in enumerate(data.questions()):
                    evidence = [e for e in qa.get("evidence", []) if e]
                    if not evidence:
                        continue
                    results = mem.recall("locomo", qa["question"], limit=LIMIT, record=args.record)["results"]
                    ranked = [id_to_dia.get(r["id"], "") for r in reversed(results) if r["type"] == "memory"]
                    key = (f"{path.stem}/{number}", int(qa["category"]))
                    categories[key] = int(qa["category"])
                    scores[name][key] = score_question(ranked, evidence)
                    if not ranked and int(qa["category"]) != 5:
                        empties[name] += 1
    base = variants[0][0]
    table = []
    for name, _ in variants:
        for group in [
            "overall",
            *[str(c) for c in sorted({c for c in categories.values()})],
            *[p.stem for p in files],
        ]:
            keys = [
                k
                for k in scores[name]
                if (group == "overall" and k[1] != 5)
                or (group.isdigit() and len(group) == 1 and k[1] == int(group))
                or (
                    not (len(group) == 1 and group.isdigit())
                    and group != "overall"
                    and k[0].startswith(group + "/")
                    and k[1] != 5
                )
            ]
            if not keys:
                continue
            r10 = sum(scores[name][k]["recall@10"] for k in keys) / len(keys)
            nd = sum(scores[name][k]["ndcg@10"] for k in keys) / len(keys)
            better = sum(
                1 for k in keys if scores[name][k]["recall@10"] > scores[base][k]["recall@10"] + 1e-9
            )
            worse = sum(1 for k in keys if scores[name][k]["recall@10"] < scores[base][k]["recall@10"] - 1e-9)
            label = CATEGORY_NAMES.get(int(group), group) if len(group) == 1 and group.isdigit() else group
            table.append(
                {
                    "variant": name,
                    "group": label,
                    "recall@10": f"{r10:.3f}",
                    "ndcg@10": f"{nd:.3f}",
                    "+/-": f"+{better}/-{worse}",
                    "n": len(keys),
                }
            )
    headers = ["variant", "group", "recall@10", "ndcg@10", "+/-", "n"]
    print_table(headers, [[row[h] for h in headers] for row in table])
    print("real questions answered empty:", dict(empties))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
