"""What every part of the reliability benchmark shares: the time budget, opening a Memory, reading rows,
/proc memory figures, and the ``verdict`` of a table row.

The parts import this module by plain name (``python benchmarks/reliability`` puts this folder first
on ``sys.path``); it adds ``benchmarks/`` behind it so ``_common``, ``_rpc`` and ``_fuzz`` are found.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent.parent
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(1, str(BENCHMARKS))

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402

MODEL = "all-minilm-l6-v2"
SAMPLES_KEPT = 6


class Clock:
    """The whole run's time budget."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


@dataclass
class Run:
    """What a part gets: scratch space, the model (None: keyword-only), the budget and the seed."""

    work: Path
    models_dir: Path | None
    clock: Clock
    seed: int
    args: Any


def open_memory(db: Path, models_dir: Path | None, **extra: Any) -> Memory:
    settings = Settings(
        db_path=db,
        models_dir=models_dir or db.parent / "models",
        embedding_mode="onnx" if models_dir else "none",
        embedding_model=MODEL,
        update_check=False,
        auto_fetch_model=False,
        task_retry_delay=0,
        **extra,
    )
    memory = Memory(settings)
    memory.wait_until_ready(120)
    return memory


def fetch_contents(memory: Memory, agent: str, ids: list[int]) -> dict[int, str]:
    """Contents of ``ids`` (memories of ``agent``) through the API, 20 refs per call."""
    found: dict[int, str] = {}
    for start in range(0, len(ids), 20):
        refs = [f"mem:{i}" for i in ids[start : start + 20]]
        for row in memory.get_contents(agent, refs)["items"]:
            found[int(row["id"])] = row["content"]
    return found


def all_rows(memory: Memory, agent: str) -> list[dict[str, Any]]:
    listed = memory.list_memories(agent, limit=1000)
    if listed["total"] > len(listed["items"]):
        raise RuntimeError(f"agent {agent} has more than 1000 rows; the benchmark keeps agents smaller")
    return list(listed["items"])


def proc_status_mb(pid: int | str = "self") -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process from /proc, in MB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def reset_peak(pid: int | str = "self") -> bool:
    """Reset the process's VmHWM to its current RSS (Linux: write 5 to clear_refs); False if refused."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def verdict(ok: bool) -> str:
    return "ok" if ok else "FAIL"
