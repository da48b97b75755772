"""(h) File race: dry-run imports and exports through a stdio server while a local process swaps the
path they name between a regular file (or folder) inside the export folder and a symlink pointing
outside it. Counted: imports that read the outside file (its header names agent ``OUTSIDE-SECRET``),
exports that wrote outside (the outside victim file changed, or a file appeared in the outside
folder), ``internal`` errors. Target: 0 reads and 0 writes outside; refusals are fine.

Two variants: the file itself (``exports/race.jsonl``) and a folder on the way (``exports/sub``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _rpc import StdioServer, server_env, tool_payload
from shared import SAMPLES_KEPT, Run, verdict

TITLE = "(h) imports and exports racing a symlink swap"
SECRET = "OUTSIDE-SECRET"
VICTIM = "VICTIM ORIGINAL\n"


def export_text(agent: str) -> str:
    head = {
        "type": "header",
        "format": "cpersona-export",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00Z",
        "source_schema_version": 1,
        "agent_id": agent,
        "include_embeddings": False,
        "embedding_model": None,
        "embedding_dim": None,
        "counts": {"memories": 1, "episodes": 0, "profiles": 0},
    }
    row = {"type": "memory", "agent_id": agent, "content": f"a memory of {agent}"}
    return json.dumps(head) + "\n" + json.dumps(row) + "\n"


class Swapper:
    """A thread that keeps swapping ``name`` between a real entry and a symlink to ``outside``."""

    def __init__(self, folder: Path, name: str, make_real: Any, outside: Path) -> None:
        self.folder, self.name, self.make_real, self.outside = folder, name, make_real, outside
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        path = self.folder / self.name
        spare = self.folder / f".{self.name}.spare"
        while not self.stop.is_set():
            for real in (True, False):
                try:
                    if spare.is_symlink() or spare.is_file():
                        spare.unlink()
                    elif spare.is_dir():
                        shutil.rmtree(spare)
                    if real:
                        self.make_real(spare)
                    else:
                        spare.symlink_to(self.outside)
                    if spare.is_dir() and path.is_symlink():
                        path.unlink()  # a folder cannot be renamed over a symlink: a short gap
                    elif path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)  # nor anything over a folder
                    os.replace(spare, path)
                    self.swaps += 1
                except OSError:
                    continue
                time.sleep(0)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def call(server: StdioServer, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    rid = server.next_id()
    server.send(server.call_tool_message(rid, tool, arguments))
    return tool_payload(server.wait([rid], 60).get(rid, {}))


def classify(payload: dict[str, Any] | None) -> str:
    if payload is None:
        return "unanswered"
    if payload.get("ok") is True:
        return "ok"
    return "internal" if payload.get("error_code") == "internal" else "refused"


def variant(server: StdioServer, exports: Path, outside: Path, rounds: int, folder: bool) -> dict[str, Any]:
    """``rounds`` raced dry-run imports, then ``rounds`` raced exports; counts of what happened."""
    tally: Counter[str] = Counter()
    samples: list[dict[str, Any]] = []
    secret_outside = outside / ("race.jsonl" if folder else "secret.jsonl")
    secret_outside.write_text(export_text(SECRET))
    victim = outside / ("out.jsonl" if folder else "victim.jsonl")

    def real_import_target(spare: Path) -> None:
        if folder:
            spare.mkdir()
            (spare / "race.jsonl").write_text(export_text("inside"))
        else:
            spare.write_text(export_text("inside"))

    name = "sub" if folder else "race.jsonl"
    relative = "sub/race.jsonl" if folder else "race.jsonl"
    with Swapper(exports, name, real_import_target, outside if folder else secret_outside) as swapper:
        for _ in range(rounds):
            payload = call(server, "import_memories", {"input_path": relative, "dry_run": True})
            outcome = classify(payload)
            if (
                outcome == "ok"
                and payload is not None
                and (payload.get("header") or {}).get("agent_id") == SECRET
            ):
                outcome = "read_outside"
            tally[f"import_{outcome}"] += 1
            if outcome in ("read_outside", "internal", "unanswered") and len(samples) < SAMPLES_KEPT:
                samples.append({"tool": "import_memories", "outcome": outcome, "reply": repr(payload)[:300]})
        import_swaps = swapper.swaps

    def real_export_target(spare: Path) -> None:
        if folder:
            spare.mkdir()
        else:
            spare.write_text("inside placeholder\n")

    victim.write_text(VICTIM)
    before = set(os.listdir(outside))
    relative = "sub/out.jsonl" if folder else "race.jsonl"
    with Swapper(exports, name, real_export_target, outside if folder else victim) as swapper:
        for _ in range(rounds):
            payload = call(
                server, "export_memories", {"agent_id": "seed", "output_path": relative, "overwrite": True}
            )
            outcome = classify(payload)
            changed = victim.read_text(errors="replace") != VICTIM
            appeared = set(os.listdir(outside)) - before
            if changed or appeared:
                outcome = "wrote_outside"
                victim.write_text(VICTIM)
                for extra in appeared:
                    (outside / extra).unlink(missing_ok=True)
            tally[f"export_{outcome}"] += 1
            if outcome in ("wrote_outside", "internal", "unanswered") and len(samples) < SAMPLES_KEPT:
                samples.append({"tool": "export_memories", "outcome": outcome, "reply": repr(payload)[:300]})
        export_swaps = swapper.swaps
    return {
        "rounds": rounds,
        "swaps": import_swaps + export_swaps,
        "reads_outside": tally["import_read_outside"],
        "writes_outside": tally["export_wrote_outside"],
        "internal": tally["import_internal"] + tally["export_internal"],
        "unanswered": tally["import_unanswered"] + tally["export_unanswered"],
        "outcomes": dict(tally),
        "samples": samples,
    }


def run(r: Run) -> dict[str, Any]:
    db = r.work / "memory.db"
    exports, outside = r.work / "exports", r.work / "outside"
    exports.mkdir()
    for kind in ("file", "folder"):
        (outside / kind).mkdir(parents=True)
    server = StdioServer(server_env(db, None), r.work / "stderr.log")
    server.initialize()
    call(server, "store", {"agent_id": "seed", "message": {"content": "the one row every export writes"}})
    try:
        results = {
            kind: variant(server, exports, outside / kind, r.args.race_rounds, folder=kind == "folder")
            for kind in ("file", "folder")
        }
    finally:
        server.close()
    bad = sum(v["reads_outside"] + v["writes_outside"] for v in results.values())
    return {**results, "passed": bad == 0}


def rows(h: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    out = []
    for name in ("file", "folder"):
        v = h[name]
        out.append(
            [
                "(h) file race",
                f"{name} swap: reads / writes outside of {v['rounds']} + {v['rounds']}; internal",
                f"{v['reads_outside']} / {v['writes_outside']}; {v['internal']}",
                "0 / 0; 0",
                verdict(v["reads_outside"] == v["writes_outside"] == 0),
            ]
        )
    return out


def notes(h: dict[str, Any]) -> None:
    """After the table: samples of reads or writes outside and internal errors."""
    for name in ("file", "folder"):
        print(
            f"\nrace {name}: {h[name]['swaps']} swaps; {h[name]['outcomes']}", *h[name]["samples"], sep="\n  "
        )
