"""Bulk embedding hands its freed tensors back to the OS (glibc ``malloc_trim``), so RSS follows the batch.

Measured in fresh interpreters (RSS of the pytest process says nothing): the real MiniLM embeds
64 texts of 40-200 words in a worker thread, as the back-fill does.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from cpersona.embed.runtime.heap import release_free_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

CHILD = r"""
import sys, threading
from pathlib import Path
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime import onnx_backend
from cpersona.embed.runtime.onnx_backend import OnnxBackend

if sys.argv[2] == "off":
    onnx_backend.release_free_memory = lambda: False

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

backend = OnnxBackend(load_manifest("all-minilm-l6-v2"), Path(sys.argv[1]), batch_size=16)
backend.load()
words = "the memory server keeps what an agent learnt last week and finds it again when asked".split()
texts = [" ".join(words[(i + k) % len(words)] for k in range(40 + i % 160)) for i in range(64)]
backend.embed_documents(texts[:2])
loaded = rss_mb()
worker = threading.Thread(target=lambda: backend.embed_documents(texts))
worker.start()
worker.join()
print(loaded, rss_mb())
"""


def _start(models_dir: Path, trim: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(models_dir / "all-minilm-l6-v2"), trim],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rss(child: subprocess.Popen[str]) -> tuple[int, int]:
    """(RSS once loaded, RSS after the worker's batch) in MB, as the child printed them."""
    stdout, stderr = child.communicate(timeout=300)
    assert child.returncode == 0, stderr
    out = stdout.split()
    return int(out[-2]), int(out[-1])


def test_release_reports_whether_the_c_library_can() -> None:
    assert release_free_memory() is GLIBC


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's; elsewhere release_free_memory is a no-op")
def test_bulk_embedding_in_a_worker_thread_gives_its_memory_back(minilm_models_dir: Path) -> None:
    # Two separate interpreters (each measures only its own RSS), run side by side to halve the wait.
    with_trim, without_trim = _start(minilm_models_dir, "on"), _start(minilm_models_dir, "off")
    loaded, after = _rss(with_trim)
    assert after - loaded <= 40, (loaded, after)
    # The same run without the trim keeps tens of MB more: the check above can fail.
    _, kept = _rss(without_trim)
    assert kept - after >= 30, (after, kept)
