"""Every LoCoMo question's recall answer as JSON, to prove a refactor changes no answer.

    python benchmarks/research/answers_dump.py ../shared/data/locomo --models-dir DIR --out before.json
    python benchmarks/research/answers_dump.py ../shared/data/locomo --models-dir DIR --out after.json
    python benchmarks/research/answers_dump.py --compare before.json after.json
    PYTHONPATH=/tmp/old-tree python benchmarks/research/answers_dump.py ...   # another tree's code (git archive)

Per conversation a fresh database (every turn one memory, as benchmarks/locomo.py stores them), then
per question two answers:

- ``default``: ``Memory.recall`` as a new user gets it (the production pipeline and gate,
  uncalibrated), ``record=False`` so one question's bookkeeping never moves the next one's
  ranking; ``trace=True``, so every stage's candidates and scores are compared too;
- ``keyword``: the same pipeline with no query vector (what recall does while the model is not
  ready).

Queries are embedded by the float32 graph (``CPERSONA_EMBED_QUERY_KERNEL=exact``): the shipped
``auto`` choice depends on a timing check at load, so it is not the same from run to run. Each
answer holds the returned rows ``[kind, id, score]`` (best first) with their ``match_reason``,
the gate verdict, the explanation, and every scored candidate the gate was handed with its
unrounded score (a recording wrapper around the production gate stage). ``--compare`` says whether
two dumps are equal, scores to 1e-9, and lists the first differences.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import model_memory  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402

import cpersona  # noqa: E402
from cpersona.core.text import utc_now  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

LIMIT = 10
AGENT = "locomo"
TOLERANCE = 1e-9


class RecordingGate:
    """The production gate stage, noting the candidates it is handed (kind, id, unrounded score)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[list[Any]] = []

    def apply(self, rows: list[Any], request: Any, evidence: Any) -> Any:
        self.seen = [[r.row["type"], int(r.row["id"]), r.score] for r in rows]
        return self.inner.apply(rows, request, evidence)


def answer(rows: list[dict[str, Any]], gate: dict[str, Any], seen: list[list[Any]]) -> dict[str, Any]:
    """One question's answer: returned rows best first, the gate's verdict, the gate's candidates."""
    return {
        "rows": [[r["type"], int(r["id"]), (r.get("match_reason") or {}).get("score")] for r in rows],
        "reasons": [r.get("match_reason") for r in rows],
        "gate": gate,
        "candidates": seen,
    }


def dump(data_dir: Path, models_dir: Path, model: str, names: list[str] | None) -> dict[str, Any]:
    """Question key (conversation/number) → {question, default, keyword}."""
    out: dict[str, Any] = {}
    for path in conversation_files(data_dir, names):
        data = Conversation.load(path)
        # No background calibration (model_memory): the gate stays as shipped. The float32 query graph:
        # "auto" picks the int8 copy when a timing check at load says it is faster, so on a loaded
        # machine two runs of the same code can embed queries differently.
        with model_memory(models_dir, model, embed_query_kernel="exact") as mem:
            for dia_id, content, stamp in data.turns():
                mem.store(AGENT, content, msg_id=dia_id, timestamp=stamp)
            shipped = mem.recaller.pipeline
            recorder = RecordingGate(shipped.gate)
            mem.recaller.pipeline = RecallPipeline(shipped.settings, gate=recorder)
            for number, qa in enumerate(data.questions()):
                question = str(qa["question"])
                full = mem.recall(AGENT, question, limit=LIMIT, record=False, trace=True)
                rows = list(reversed(full["results"]))
                default = answer(rows, full["gate"], recorder.seen)
                default.update(
                    explanation=full.get("explanation"), trace=full.get("trace"), search=full["search"]
                )
                recorder.seen = []
                request = RecallRequest(scope=Scope(AGENT), query=question, limit=LIMIT)
                with mem.recaller.store.recall_read() as session:
                    outcome = mem.recaller.pipeline.run(session, request, query_vector=None, now=utc_now())
                keyword = answer(outcome.rows, outcome.gate, recorder.seen)
                out[f"{path.stem}/{number}"] = {
                    "question": question,
                    "default": default,
                    "keyword": keyword,
                }
        print(f"{path.stem}: {len(data.questions())} questions", file=sys.stderr)
    return out


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two dumps differ (floats equal within TOLERANCE)."""
    if isinstance(a, float) or isinstance(b, float):
        if (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and math.isclose(a, b, abs_tol=TOLERANCE)
        ):
            return []
        return [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        found = [f"{where}.{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for key in sorted(set(a) & set(b)):
            found += differences(a[key], b[key], f"{where}.{key}")
        return found
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, nargs="?")
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--conversations", nargs="*", default=None)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        found = differences(before, after)
        rows = sum(len(q[arm]["rows"]) for q in before.values() for arm in ("default", "keyword"))
        print(f"{len(before)} questions, {rows} returned rows compared (default + keyword): ", end="")
        print("identical" if not found else f"{len(found)} differences")
        for line in found[:20]:
            print("  " + line)
        return 0 if not found else 1
    if args.data_dir is None or args.models_dir is None or args.out is None:
        parser.error("data_dir, --models-dir and --out are needed to dump")
    print(f"cpersona from {Path(cpersona.__file__).parent}", file=sys.stderr)  # which tree's code answers
    result = dump(args.data_dir, args.models_dir, args.model, args.conversations)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"wrote {len(result)} questions to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
