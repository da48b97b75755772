"""How long the browser view takes to render the memories page, and how large the page is.

    python benchmarks/ui_render.py [--rows 200] [--runs 200] [--json out.json]

A real keyword-only store gets ``--rows`` memories (some locked, text with markup characters to
escape); the page's data is fetched once with ``Memory.browse_memories`` (the same for any
renderer), then the page body and its frame are rendered ``--runs`` times. Prints p50/p95 of the
render alone (wall clock, and the process's CPU time: steadier on a shared machine), for scale the
time to fetch that data (browse_memories + list_agents, as the handler does), and the page's size
in bytes: the figures for comparing one way of building the HTML with another.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary_ms, write_json  # noqa: E402


def main() -> None:
    """Seed, render, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", default=None)
    parser.add_argument("--html", default=None, help="write the rendered page here (to compare renderers)")
    args = parser.parse_args()

    from cpersona.config import Settings
    from cpersona.embed.runtime.none_backend import NoEmbeddings
    from cpersona.memory import Memory
    from cpersona.ui import pages
    from cpersona.ui.html import layout

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db_path=Path(tmp) / "memory.db",
            models_dir=Path(tmp) / "models",
            embedding_mode="none",
            update_check=False,
            auto_fetch_model=False,
            operating_context_path=Path(tmp) / "operating-context.toml",
        )
        with Memory(settings, backend=NoEmbeddings()) as memory:
            memory.wait_until_ready(5)
            for i in range(args.rows):
                stored = memory.store(
                    "ana",
                    f"note {i}: the <staging> db moved to port {5400 + i} & 'ops' said \"ok\" " * 3,
                    project_id="infra" if i % 2 else "",
                    channel="ops" if i % 3 else "",
                )
                if i % 7 == 0:
                    memory.lock_memory(stored["id"], agent_id="ana")
            f = pages.Filters(agent="ana", size=args.rows)
            result = memory.browse_memories("ana", offset=0, limit=args.rows)
            agents = memory.list_agents()["agents"]
            fetched = []  # the page's data as the handler fetches it, for scale (the same for any renderer)
            for _ in range(max(5, args.runs // 10)):
                started = time.perf_counter()
                memory.browse_memories("ana", offset=0, limit=args.rows)
                memory.list_agents()
                fetched.append(time.perf_counter() - started)
    view = pages.View(csrf="c" * 43, read_only=False)

    def render() -> str:
        body = pages.memories_page(result, f, agents, view)
        return layout(
            "Memories", body, active="/memories", csrf=view.csrf, read_only=False, authenticated_by_login=True
        )

    html = render()
    if args.html:
        Path(args.html).write_text(html, encoding="utf-8")
    samples, cpu = [], []
    for _ in range(args.runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        render()
        samples.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    stats, cpu_stats, fetch_stats = summary_ms(samples), summary_ms(cpu), summary_ms(fetched)
    size = len(html.encode("utf-8"))
    print_table(
        ["page", "rows", "render p50 ms", "p95 ms", "cpu p50 ms", "fetch p50 ms", "bytes"],
        [
            [
                "memories",
                result["count"],
                stats["p50_ms"],
                stats["p95_ms"],
                cpu_stats["p50_ms"],
                fetch_stats["p50_ms"],
                size,
            ]
        ],
    )
    write_json(
        args.json,
        {
            "rows": result["count"],
            "render": stats,
            "render_cpu": cpu_stats,
            "fetch": fetch_stats,
            "bytes": size,
        },
    )


if __name__ == "__main__":
    main()
