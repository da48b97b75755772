"""The secret guard: how many synthetic secrets it redacts, how many LoCoMo turns it alters, what it costs.

(Not ``benchmarks/secrets.py``: a script's folder comes first on ``sys.path``, and that name would hide the
standard library's ``secrets`` module, which ``cpersona.acl`` imports.)

    python benchmarks/secret_redaction.py ../shared/data/locomo [--secrets 500] [--seed 39] [--stores 200]

1. Detection (``cpersona.secret_guard.redact``): the corpus of benchmarks/secret_corpus.py (500
   sentences, 29 kinds, a fixed seed); a secret counts as redacted when no line of its value is left
   in the text. Then every turn of the LoCoMo conversations: each altered turn is listed.
2. End to end, keyword-only SQLite: the corpus stored through ``Memory.store`` (CPERSONA_SECRETS
   redact), then each value looked for in recall (the value as the query), an export file, the
   browser view's listing (``browse_memories``, what its pages render) and the bytes of the database
   files (the file, its WAL and shared memory). Every value must be absent from all four.
   The same with ``allow`` (and the export's include_secrets) is the control: each probe finds values that are there.
3. Per-store cost: the median wall time of ``store`` with the guard on and off (``allow``) over
   ``--stores`` LoCoMo turns, and the detector alone per turn.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table  # noqa: E402
from secret_corpus import Sample, corpus  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.runtime.none_backend import NoEmbeddings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.secret_guard import redact, scan  # noqa: E402


def locomo_turns(data_dir: Path) -> list[str]:
    """Every turn's text of every conversation file in ``data_dir``."""
    turns: list[str] = []
    for path in sorted(data_dir.glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        for key, session in conversation.items():
            if re.fullmatch(r"session_\d+", key):
                turns.extend(turn["text"] for turn in session)
    return turns


def leaked(sample: Sample, text: str) -> bool:
    """A line of the secret value is still in ``text``."""
    return any(part and part in text for part in sample.value.split("\n"))


def _settings(folder: Path, policy: str) -> Settings:
    return Settings(
        db_path=folder / "memory.db",
        models_dir=folder / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=folder / "ctx.toml",
        export_dir=folder,
        secrets=policy,  # type: ignore[arg-type]
    )


def detection(samples: list[Sample], turns: list[str]) -> None:
    by_kind: dict[str, list[bool]] = {}
    for s in samples:
        by_kind.setdefault(s.kind, []).append(not leaked(s, redact(s.text).text))
    rows = [(k, len(v), sum(v)) for k, v in sorted(by_kind.items())]
    print_table(["kind", "samples", "redacted"], rows)
    total = sum(r[2] for r in rows)
    print(f"\nsecrets redacted: {total}/{len(samples)} ({100 * total / len(samples):.1f}%)")
    t0 = time.perf_counter()
    altered = [(t, scan(t)) for t in turns]
    per_turn = (time.perf_counter() - t0) / len(turns)
    altered = [(t, f) for t, f in altered if f]
    print(f"LoCoMo turns altered: {len(altered)}/{len(turns)} ({100 * len(altered) / len(turns):.2f}%)")
    for text, found in altered:
        print(f"  [{', '.join(f.kind for f in found)}] {text[:160]}")
    print(f"detector alone: {per_turn * 1e6:.0f} µs per LoCoMo turn")


def end_to_end(samples: list[Sample], policy: str) -> tuple[int, int, int, int]:
    """How many values recall, the export, the browser listing and the database files still hold."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with Memory(_settings(folder, policy), backend=NoEmbeddings()) as memory:
            memory.wait_until_ready(5)
            for i, s in enumerate(samples):
                memory.store("bench", s.text, msg_id=f"s{i}")
            recalled = 0
            for s in samples:
                query = s.value.split("\n")[0][:200]
                rows = memory.recall("bench", query, limit=5)["results"]
                recalled += any(leaked(s, json.dumps(r)) for r in rows)
            exported = folder / "export.jsonl"
            memory.export_memories("bench", str(exported), include_secrets=policy == "allow")
            export_text = exported.read_text(encoding="utf-8")
            pages = []
            offset = 0
            while True:
                page = memory.browse_memories("bench", offset=offset, limit=100)
                pages.append(json.dumps(page["items"]))
                offset += page["count"]
                if page["count"] == 0 or offset >= page["total"]:
                    break
            browsed = "".join(pages)
            memory.stats()  # a read after the writes: the WAL holds what the file does not yet
            file_bytes = b"".join(p.read_bytes() for p in folder.glob("memory.db*"))
        in_export = sum(leaked(s, export_text) for s in samples)
        in_browse = sum(leaked(s, browsed) for s in samples)
        in_file = sum(
            any(part and part.encode() in file_bytes for part in s.value.split("\n")) for s in samples
        )
    return recalled, in_export, in_browse, in_file


def store_cost(turns: list[str], stores: int) -> None:
    rows = []
    for policy in ("allow", "redact"):
        with (
            tempfile.TemporaryDirectory() as tmp,
            Memory(_settings(Path(tmp), policy), backend=NoEmbeddings()) as memory,
        ):
            memory.wait_until_ready(5)
            times = []
            for i, text in enumerate(turns[:stores]):
                t0 = time.perf_counter()
                memory.store("cost", text, msg_id=f"t{i}")
                times.append(time.perf_counter() - t0)
        rows.append((policy, stores, f"{statistics.median(times) * 1000:.3f}"))
    print_table(["CPERSONA_SECRETS", "stores", "median ms per store"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="the LoCoMo folder (read-only)")
    parser.add_argument("--secrets", type=int, default=500)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--stores", type=int, default=200)
    args = parser.parse_args()
    samples = corpus(args.secrets, args.seed)
    turns = locomo_turns(args.data_dir)
    print(
        f"# {len(samples)} synthetic secrets of {len({s.kind for s in samples})} kinds; {len(turns)} LoCoMo turns\n"
    )
    detection(samples, turns)
    print()
    # allow is the control: it shows each probe finds a value that is there.
    found = {policy: end_to_end(samples, policy) for policy in ("redact", "allow")}
    where = ("recall", "export", "browser listing", "database files")
    print_table(
        ["where", "values found (redact)", "values found (allow: control)"],
        [(w, found["redact"][i], found["allow"][i]) for i, w in enumerate(where)],
    )
    print()
    store_cost(turns, args.stores)


if __name__ == "__main__":
    main()
