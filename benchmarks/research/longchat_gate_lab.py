"""Per question of the long histories: the gate's evidence against the calibrated threshold.

    python benchmarks/research/longchat_gate_lab.py benchmarks/results/longchat-multi --models-dir DIR \
        --split choose [--out gate.json]

Uses the histories ``benchmarks/longchat.py --keep-stored DATA/stored`` stored (run that first). For each
history: a copy of its stored file, one ``calibrate_threshold``, then every question recalled once; the
line printed per question gives its type, evidence, coverage, top cosine, the threshold, whether it
passed and how many rows came back. This is how the long-record gate (docs/quality-gate.md "Long records
and the gate") was found: before it, the probes' cut sat at 0.70–0.76 and a third of the real
questions below it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from longchat import AGENT, copy_db, load  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402


def stored_file(data: Path, history: dict[str, Any], model: str) -> Path:
    """The file ``longchat.py --keep-stored`` wrote for ``history`` (its name carries a digest)."""
    digest = hashlib.sha1(json.dumps(history, sort_keys=True).encode()).hexdigest()[:10]
    return data / "stored" / f"{history['history_id']}-{digest}-onnx-{model}-cut0.db"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="the longchat data dir (with stored/)")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="choose")
    parser.add_argument("--out", type=Path, help="write every question's line as JSON here")
    args = parser.parse_args()
    lines: list[dict[str, Any]] = []
    for history in load(args.data, args.split):
        source = stored_file(args.data, history, args.model)
        if not source.exists():
            print(
                f"skipped {history['history_id']}: no stored file (run longchat.py --keep-stored)",
                file=sys.stderr,
            )
            continue
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "history.db"
            copy_db(source, db)
            settings = Settings(
                db_path=db,
                embedding_mode="onnx",
                models_dir=args.models_dir,
                embedding_model=args.model,
                update_check=False,
                auto_fetch_model=False,
                auto_calibrate=False,
            )
            with Memory(settings, self_calibration=False) as mem:
                if not mem.wait_until_ready(300):
                    raise SystemExit(f"model did not load: {mem.embedding_status()}")
                gate_out = mem.calibrate_threshold(AGENT)["gate"]
                for q in history["questions"]:
                    answer = mem.recall(AGENT, q["question"], limit=10, record=False)
                    gate = answer["gate"]
                    line = {
                        "history": history["history_id"],
                        "type": q["question_type"],
                        "evidence": gate.get("evidence"),
                        "coverage": gate.get("coverage"),
                        "top_cosine": gate.get("top_cosine"),
                        "threshold": gate.get("threshold"),
                        "kind": gate.get("kind"),
                        "passed": gate.get("passed"),
                        "rows": answer["count"],
                        "long_records": gate_out.get("long_records"),
                    }
                    lines.append(line)
                    print(json.dumps(line), flush=True)
    empty = sum(1 for line in lines if line["rows"] == 0)
    print(f"{len(lines)} questions, {empty} answered empty", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(lines, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
