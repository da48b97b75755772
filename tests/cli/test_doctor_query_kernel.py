"""`cpersona doctor` says how recall queries will be embedded, with and without the optional ``onnx``
package (the ``fast-query`` extra): without it, the model still loads and doctor names the extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from model_fixtures import MINILM
from test_model_hints_cli import env_for

from cpersona.embed.runtime.query_kernel import NO_ONNX

#: Runs the real CLI in a fresh interpreter where ``import onnx`` fails, as on an install without the
#: extra (``sys.modules[name] = None`` is Python's own "not importable" mark).
WITHOUT_ONNX = "import sys; sys.modules['onnx'] = None; from cpersona.cli.main import entry; entry()"


def _doctor(env: dict[str, str], *args: str, onnx: bool) -> subprocess.CompletedProcess[str]:
    code = WITHOUT_ONNX if not onnx else "from cpersona.cli.main import entry; entry()"
    return subprocess.run(
        [sys.executable, "-c", code, "doctor", *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("onnx", [False, True], ids=["without-onnx", "with-onnx"])
def test_doctor_says_how_recall_queries_are_embedded(
    tmp_path: Path, minilm_models_dir: Path, onnx: bool
) -> None:
    env = env_for(tmp_path, minilm_models_dir, CPERSONA_EMBEDDING_MODEL=MINILM)
    shown = _doctor(env, onnx=onnx)
    assert shown.returncode == 0, shown.stderr
    assert "loaded: yes (state healthy), 384-d" in shown.stdout
    line = next(row for row in shown.stdout.splitlines() if "recall queries:" in row)
    if onnx:
        assert "int8 copy, checked after the first recall" in line
    else:
        assert line.strip() == f"recall queries: float32 graph only: {NO_ONNX}"
        assert "pip install 'cpersona-embedded[fast-query]'" in line
    assert "Traceback" not in shown.stderr and "error" not in shown.stderr.lower(), shown.stderr
    report = json.loads(_doctor(env, "--json", onnx=onnx).stdout)
    assert report["embedding"]["query_kernel"] == line.split("recall queries: ", 1)[1]
