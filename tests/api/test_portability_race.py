"""Path confinement under a racing local process (issue 17, defect 4).

Another process swaps ``exports/race.jsonl`` between a regular file and a symlink to a file
outside, and ``exports/sub`` between a real folder and a symlink to a folder outside, as fast
as it can, dwelling now and then in a state so each one is met. Raced imports (dry runs) and exports through the tool layer must never read or
write anything outside the export folder, never leave a ``.partial`` file outside it, and
never answer ``internal``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_portability import HEADER, open_memory

from cpersona.server.dispatch import dispatch_tool

pytestmark = pytest.mark.slow

RACES = 200
# The race runs at least RACES rounds and goes on (up to this many seconds) until both a clean
# outcome and a refused symlink were seen: how often a swap lands in a given state depends on the
# machine's scheduler, and a run that never met a symlink would prove nothing.
RACE_SECONDS = 120

RACER = r"""
import os, random, shutil, sys, time
exports, outside = sys.argv[1], sys.argv[2]
pairs = [
    (os.path.join(exports, name), os.path.join(exports, ".real-" + name), os.path.join(exports, ".link-" + name))
    for name in ("race.jsonl", "sub")
]
for target, real, link in pairs:
    os.symlink(os.path.join(outside, "secret.jsonl" if target.endswith(".jsonl") else "dir"), link)
open(os.path.join(exports, ".racer-started"), "w").close()
deadline = time.monotonic() + 300
while time.monotonic() < deadline and not os.path.exists(os.path.join(exports, ".stop")):
    for target, real, link in pairs:
        if os.path.isdir(target) and not os.path.islink(target) and os.path.lexists(real):
            shutil.rmtree(target, ignore_errors=True)  # a folder an export created while the name was free
        # Each step is one atomic rename: the name is a real file/folder, then nothing, then a symlink.
        for src, dst in ((real, target), (target, real), (link, target), (target, link)):
            try:
                os.rename(src, dst)
            except OSError:
                pass
            if random.random() < 0.25:  # mostly back-to-back swaps, sometimes a state that lasts
                time.sleep(random.choice((0.0005, 0.002, 0.005)))
"""


def outside_state(outside: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(outside)): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
        for p in sorted(outside.rglob("*"))
    }


def test_raced_imports_and_exports_never_touch_anything_outside(tmp_path: Path) -> None:
    exports, outside = tmp_path / "exports", tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    secret = json.dumps({**HEADER, "agent_id": "outside"}) + "\n"
    secret += "".join(
        json.dumps({"type": "memory", "agent_id": "outside", "content": f"outside secret {i}"}) + "\n"
        for i in range(3)
    )
    (outside / "secret.jsonl").write_text(secret)
    (outside / "dir" / "race.jsonl").write_text(secret)
    inside = json.dumps({**HEADER, "agent_id": "inside"}) + "\n"
    inside += json.dumps({"type": "memory", "agent_id": "inside", "content": "inside row"}) + "\n"
    exports.mkdir()
    (exports / ".real-race.jsonl").write_text(inside)
    (exports / ".real-sub").mkdir()
    (exports / ".real-sub" / "race.jsonl").write_text(inside)
    before = outside_state(outside)

    racer = subprocess.Popen([sys.executable, "-c", RACER, str(exports), str(outside)])
    outcomes: dict[str, int] = {}
    messages: set[str] = set()
    read_outside = wrote_outside = 0
    try:
        while not (exports / ".racer-started").exists():
            assert racer.poll() is None, "the racing process died"
            time.sleep(0.01)
        with open_memory(tmp_path, "db") as mem:
            mem.store("a", "exported row")
            deadline = time.monotonic() + RACE_SECONDS
            i = 0
            while i < RACES or (
                not (outcomes.get("ok") and outcomes.get("path_refused")) and time.monotonic() < deadline
            ):
                i += 1
                path = "race.jsonl" if i % 2 else "sub/race.jsonl"
                got = dispatch_tool(
                    mem, mem.settings, "import_memories", {"input_path": path, "dry_run": True}
                )
                outcomes[got.get("error_code", "ok")] = outcomes.get(got.get("error_code", "ok"), 0) + 1
                messages.add(f"{got.get('error_code')}: {str(got.get('error'))[-90:]}")
                if got["ok"] and got["header"]["agent_id"] == "outside":
                    read_outside += 1
                put = dispatch_tool(
                    mem,
                    mem.settings,
                    "export_memories",
                    {"agent_id": "a", "output_path": path, "overwrite": True},
                )
                outcomes[put.get("error_code", "ok")] = outcomes.get(put.get("error_code", "ok"), 0) + 1
                messages.add(f"{put.get('error_code')}: {str(put.get('error'))[-90:]}")
                if outside_state(outside) != before:
                    wrote_outside += 1
                    before = outside_state(outside)
    finally:
        (exports / ".stop").touch()
        racer.wait(timeout=30)
    print(
        f"race: {i} imports + {i} exports; outcomes {outcomes}; read outside {read_outside}, wrote outside {wrote_outside}"
    )
    assert read_outside == 0 and wrote_outside == 0, outcomes
    assert "internal" not in outcomes, sorted(messages)
    assert set(outcomes) <= {"ok", "path_refused", "invalid_file", "invalid_input", "file_error"}, outcomes
    assert outcomes.get("ok", 0) > 0, outcomes  # the race did not simply refuse everything
    assert outcomes.get("path_refused", 0) > 0, outcomes  # and the symlinks were met
    assert not [p for p in tmp_path.rglob("*.partial") if not p.is_relative_to(exports)]
