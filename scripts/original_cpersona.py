"""Drive the original CPersona (PyPI ``cpersona``) in a throwaway venv, to write real files of its own.

Used by scripts/make_original_fixtures.py (the small files under tests/portability/fixtures) and
benchmarks/move_in.py (10,000-memory databases). Nothing here is the original's code: it installs the
package with pip and calls its public handlers (``do_store``, ``do_archive_episode``, ...) from a small
driver run by the venv's own Python, with a plan (what to write) as a JSON file.

Vectors: the original embeds over HTTP (``EMBEDDING_MODE=http``, ``EMBEDDING_HTTP_URL``, posting
``{"texts": [...]}`` and reading ``{"embeddings": [...]}``). ``minilm_endpoint`` serves it
all-MiniLM-L6-v2 through this project's own ``cpersona embed-server`` (the model assembled from PyPI),
so its vectors are those of a model we know; ``unknown_endpoint`` serves 8-d vectors of a model we do
not know (labelled ``acme-embed-8``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VERSIONS = ("2.5.12", "2.6.14")
MINILM_LABEL = "all-MiniLM-L6-v2"  # what a user of the original sets as EMBEDDING_MODEL
UNKNOWN_LABEL = "acme-embed-8"

# Run by the original's Python: reads the plan, writes through its handlers, prints what it wrote.
DRIVER = r"""
import asyncio, json, os, sys
plan = json.load(open(sys.argv[1], encoding="utf-8"))
from cpersona import database, memory_handlers as mh, admin_handlers as ah

async def embedding_client():
    # The server builds its embedding client at start-up; a process calling the handlers builds it too.
    from cpersona import config, vector
    if config.EMBEDDING_MODE == "none":
        return
    if hasattr(vector, "build_embedding_client"):  # 2.6
        vector._embedding_client = vector.build_embedding_client()
    else:  # 2.5
        from cpersona._vendored_mcp_common.embedding_client import EmbeddingClient
        vector._embedding_client = EmbeddingClient(
            mode=config.EMBEDDING_MODE, http_url=config.EMBEDDING_URL, api_key="", api_url=config.EMBEDDING_API_URL,
            model=config.EMBEDDING_MODEL, cache_size=256, cache_ttl=300, timeout=30.0)
    await vector._embedding_client.initialize()

async def main():
    await database.init_db()
    await embedding_client()
    ids = []
    for m in plan.get("memories", []):
        r = await mh.do_store(m["agent_id"], m["message"], channel=m.get("channel", ""),
                              project_id=m.get("project_id", ""))
        ids.append(r.get("id"))
        if r.get("result") != "stored" or (os.environ.get("EMBEDDING_MODE") and not r.get("embedded")):
            print("not stored:", r, file=sys.stderr)
    for index in plan.get("lock", []):
        await ah.do_lock_memory(ids[index], agent_id=plan["memories"][index]["agent_id"])
    for e in plan.get("episodes", []):
        await mh.do_archive_episode(e["agent_id"], e.get("history", []), summary=e["summary"],
                                    keywords=e.get("keywords", ""), resolved=e.get("resolved"),
                                    project_id=e.get("project_id", ""), channel=e.get("channel", ""))
    for p in plan.get("profiles", []):
        await ah.do_update_profile(p["agent_id"], profile=p["content"])
    for q in plan.get("recalls", []):
        await mh.do_recall(q["agent_id"], q["query"], limit=5)
    graph = plan.get("associations")
    if graph:
        from cpersona import server
        for a in graph:
            anchor = "mem:%d" % ids[a["anchor"]] if "anchor" in a else ""
            relations = [{"subject": "mem:%d" % ids[r[0]] if isinstance(r[0], int) else r[0],
                          "predicate": r[1],
                          "object": "mem:%d" % ids[r[2]] if isinstance(r[2], int) else r[2]}
                         for r in a.get("relations", [])]
            await server.do_declare_associations_boundary(
                a["agent_id"], {"entities": a.get("entities", []), "relations": relations},
                anchor_ref=anchor, project_id=a.get("project_id", ""), channel=a.get("channel", ""))
    if plan.get("export"):
        r = await ah.do_export_memories("", plan["export"], include_embeddings=True)
        if not r.get("ok", True) or r.get("error"):
            print("export failed:", r, file=sys.stderr)
    await database.close_db()
    print(json.dumps({"ids": ids}))

asyncio.run(main())
"""

# Run by the original's Python: import an export file of ours into a fresh database, print its counts.
IMPORT_DRIVER = r"""
import asyncio, json, sqlite3, sys
from cpersona import database, admin_handlers as ah

async def main():
    await database.init_db()
    r = await ah.do_import_memories(sys.argv[1])
    await database.close_db()
    conn = sqlite3.connect(sys.argv[2])
    counts = {t: conn.execute("SELECT COUNT(*) FROM " + t).fetchone()[0] for t in ("memories", "episodes", "profiles")}
    print(json.dumps({"result": r, "counts": counts}, default=str))

asyncio.run(main())
"""


def ensure_venv(root: Path, version: str) -> Path:
    """A venv at ``root/cpersona-<version>`` with that release installed (kept for reuse); its python."""
    venv = root / f"cpersona-{version}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"cpersona=={version}"], check=True)
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def minilm_endpoint(work: Path) -> Iterator[str]:
    """``cpersona embed-server`` on all-MiniLM-L6-v2 (assembled from PyPI); yields its /embed URL."""
    from cpersona.embed.install.assemble import assemble_minilm
    from cpersona.embed.install.fetch import install_from

    models = work / "models"
    if not (models / "all-minilm-l6-v2").exists():
        source = assemble_minilm(work / "minilm-src")
        install_from(source, "all-minilm-l6-v2", models, stream=io.StringIO())
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "cpersona",
        "embed-server",
        "--port",
        str(port),
        "--model",
        "all-minilm-l6-v2",
    ]
    proc = subprocess.Popen([*command, "--dir", str(models)], stderr=subprocess.DEVNULL)
    try:
        _wait_for(f"http://127.0.0.1:{port}/health", proc)
        yield f"http://127.0.0.1:{port}/embed"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait_for(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the embedding server exited")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"no answer from {url}")


class _UnknownModel(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        vectors = []
        for text in body["texts"]:
            digest = hashlib.sha256(text.encode("utf-8")).digest()
            raw = [b / 255.0 - 0.5 for b in digest[:8]]
            norm = sum(v * v for v in raw) ** 0.5 or 1.0
            vectors.append([v / norm for v in raw])
        payload = json.dumps({"embeddings": vectors}).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


@contextmanager
def unknown_endpoint() -> Iterator[str]:
    """An /embed endpoint of a model this project does not know (8-d); yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _UnknownModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/embed"
    finally:
        server.shutdown()
        server.server_close()


def write_with_original(
    python: Path, db: Path, plan: dict[str, Any], *, url: str | None, label: str | None
) -> dict[str, Any]:
    """Run the plan through the original at ``python`` into ``db``; returns what the driver printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env |= {
        "CPERSONA_DB_PATH": str(db),
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_EXPORT_DIR": str(db.parent),
    }
    if url:
        env |= {"EMBEDDING_MODE": "http", "EMBEDDING_HTTP_URL": url}
    if label:
        env["EMBEDDING_MODEL"] = label
    with tempfile.TemporaryDirectory() as tmp:
        plan_file, driver = Path(tmp) / "plan.json", Path(tmp) / "driver.py"
        plan_file.write_text(json.dumps(plan), encoding="utf-8")
        driver.write_text(DRIVER, encoding="utf-8")
        done = subprocess.run(
            [str(python), str(driver), str(plan_file)], env=env, cwd=tmp, capture_output=True, text=True
        )
    if done.returncode != 0:
        raise RuntimeError(f"the original failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def import_with_original(python: Path, export_file: Path, work: Path) -> dict[str, Any]:
    """Import ``export_file`` into a fresh database of the original; its result and its row counts."""
    db = work / "back-in-the-original.db"
    for leftover in work.glob(db.name + "*"):
        leftover.unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env |= {
        "CPERSONA_DB_PATH": str(db),
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_EXPORT_DIR": str(export_file.parent),
    }
    with tempfile.TemporaryDirectory() as tmp:
        driver = Path(tmp) / "import_driver.py"
        driver.write_text(IMPORT_DRIVER, encoding="utf-8")
        done = subprocess.run(
            [str(python), str(driver), str(export_file), str(db)],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise RuntimeError(f"the original failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
