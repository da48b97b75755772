"""The ``cpersona`` command line: ``serve`` (default), ``store``, ``recall``, ``stats`` and the model commands.

Settings are read once from the environment (``Settings.from_env``) and passed
to every command as ``func(args, settings) -> int``. A bad environment value
prints one line and exits 2. Heavy imports (MCP, uvicorn) happen only in
``serve`` so the other commands start quickly.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from cpersona import __version__
from cpersona.cli.acl_commands import add_acl_commands
from cpersona.cli.chain_commands import (
    add_chain_commands,
    add_time_cue_arguments,
    describe_time_cue,
    time_cue_from_args,
)
from cpersona.cli.health_commands import add_health_commands
from cpersona.cli.model_commands import add_model_commands
from cpersona.cli.port_commands import add_port_commands
from cpersona.cli.progress import RUN_AGAIN, long_work
from cpersona.cli.register_command import add_register_command
from cpersona.cli.serve_command import cmd_serve
from cpersona.cli.ui_command import add_ui_command
from cpersona.config import ConfigError, Settings
from cpersona.core.limits import RECALL_LIMIT_DEFAULT, RECALL_LIMIT_MAX
from cpersona.core.text import counted, local_minute
from cpersona.errors import CalibrationUnavailable, Cancelled, CPersonaError, Rejected
from cpersona.retrieval.explain import describe_factors, describe_gate
from cpersona.secret_guard import logs as secret_logs

#: Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130
#: Exit code for configuration problems (bad env value, HTTP without auth).
EXIT_CONFIG = 2
#: How long store/recall wait for the embedding model before going keyword-only.
MODEL_WAIT_SECONDS = 120.0
#: Characters of content shown per row in human-readable recall output.
RECALL_SNIPPET_CHARS = 240


log = logging.getLogger("cpersona.cli")

Command = Callable[[argparse.Namespace, Settings], int]


def _open_memory(settings: Settings, *, background: bool) -> Any:
    from cpersona.memory import Memory

    # A CLI command lives for one call: background calibration is the long-running server's job.
    return Memory(settings, start_background=background, self_calibration=False)


def _print_json(value: Any, stream: TextIO | None = None) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str), file=stream or sys.stdout)


# -- store / recall / stats --------------------------------------------------------------------


def cmd_store(args: argparse.Namespace, settings: Settings) -> int:
    """Store one memory from the command line."""
    content = sys.stdin.read() if args.content == "-" else args.content
    with _open_memory(settings, background=True) as memory:
        if settings.embedding_mode != "none":
            memory.wait_until_ready(timeout=MODEL_WAIT_SECONDS)
        try:
            result = memory.store(
                args.agent, content, msg_id=args.msg_id, channel=args.channel, project_id=args.project
            )
        except Rejected as exc:
            result = {"ok": False, **exc.details()}
    if args.json:
        _print_json(result)
    elif result.get("result") == "stored":
        extra = " (truncated to the content cap)" if result.get("truncated") else ""
        embedded = "yes" if result.get("embedded") else "no (keyword search until back-filled)"
        print(f"stored {result.get('ref') or result.get('id')}{extra}; embedded: {embedded}")
    elif result.get("result") == "skipped":
        where = f" (existing {result.get('ref') or result.get('id')})" if result.get("id") is not None else ""
        print(f"skipped: {result.get('reason', 'duplicate')}{where}")
    else:
        print(f"rejected: {result.get('reason') or result.get('error')}", file=sys.stderr)
    return 0 if result.get("ok") else 1


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_recall(result: dict[str, Any], *, full: bool = False) -> list[str]:
    """Human-readable recall lines: a header, the explanation of an empty or shortened answer, the gate
    in words and any notice, then the rows worst → best with the best match (the last line) marked."""
    rows = result.get("results") or []
    raw_search = result.get("search")
    search: dict[str, Any] = raw_search if isinstance(raw_search, dict) else {}
    # recall reports whether the vector channel ran in search.vector (docs/api-shapes.md).
    keyword_only = search.get("vector") is False
    # "★ best" only marks a real match: a row with a score above 0 (not a profile, not the most
    # recent rows an empty query lists).
    best_index = max((i for i, r in enumerate(rows) if _real_match(r)), default=None)
    count = f"{len(rows)} result{'' if len(rows) == 1 else 's'}"
    order = ", worst to best — the last one (★ best) is the best match" if best_index is not None else ""
    lines = [f"{count}{order}{'; keyword-only' if keyword_only else ''}"]
    # What the answer means, before the rows (the best match stays the last line).
    gate = result.get("gate")
    if isinstance(result.get("explanation"), str):
        lines.append(f"why: {result['explanation']}")
    if isinstance(gate, dict) and gate:
        lines.append(f"gate: {describe_gate(gate)}")
    if isinstance(result.get("notice"), str):
        lines.append(f"notice: {result['notice']}")
    if isinstance(result.get("time_cue"), dict):
        lines.append(describe_time_cue(result["time_cue"]))
    for index, row in enumerate(rows):
        marker = "★ best" if index == best_index else "      "
        reason = row.get("match_reason") or {}
        if row.get("type") == "profile":
            head = "profile"
        else:
            score = reason.get("score")
            score_text = f"{score:.4f}" if isinstance(score, int | float) else "-"
            parts = describe_factors(reason)
            head = f"{row.get('ref', '?')}  {reason.get('signal', '?')} {score_text}"
            if " × " in parts:
                head += f" ({parts})"
        when = local_minute(row.get("timestamp") or row.get("created_at"))
        content = str(row.get("content", ""))
        text = " ".join(content.split()) if full else _one_line(content, RECALL_SNIPPET_CHARS)
        fate = f"  [superseded by {row['superseded_by']}]" if row.get("superseded_by") else ""
        lines.append(f"{marker}  {head}  {when}  {text}".rstrip() + fate)
    return lines


def _real_match(row: dict[str, Any]) -> bool:
    score = (row.get("match_reason") or {}).get("score")
    return row.get("type") != "profile" and isinstance(score, int | float) and score > 0


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    """Recall memories and print them worst → best with the best match marked."""
    time_cue = time_cue_from_args(args)  # a bad cue is refused before the model loads
    with _open_memory(settings, background=True) as memory:
        if settings.embedding_mode != "none":
            memory.wait_until_ready(timeout=MODEL_WAIT_SECONDS)
        result = memory.recall(
            args.agent,
            args.query,
            limit=args.limit,
            channel=args.channel,
            project_id=args.project,
            deep=args.deep,
            record=args.record,  # a person looking does not feed the recent-recall penalty
            trace=args.trace,
            time_cue=time_cue,
            include_superseded=args.include_superseded,
        )
    if args.json or args.trace:
        _print_json(result)
        return 0 if result.get("ok", True) else 1
    advisory = result.get("advisory")
    if isinstance(advisory, dict) and advisory.get("reason"):
        print(f"note: search is degraded: {advisory['reason']}", file=sys.stderr)
    for line in format_recall(result, full=args.full):
        print(line)
    return 0 if result.get("ok", True) else 1


def format_calibration(result: dict[str, Any]) -> list[str]:
    """Human summary of one calibration: the threshold in force and what each level would cut."""
    gate = result.get("gate") or {}
    precision = result.get("precision") or {}
    head = f"agent {result.get('agent_id')!r}: {result.get('rows')} memories measured"
    if not gate.get("enabled", True) or "threshold" not in gate:
        return [head + "; the fused gate is off (CPERSONA_FUSED_GATE_ENABLED=false): vector threshold only"]
    probes = int(gate.get("probes") or 0)
    cut = gate.get("probes_cut") or {}
    lines = [
        f"{head}; gate threshold {gate['threshold']:.3f} ({precision.get('level')}) on the query's best "
        "similarity",
        f"  of {probes} probe questions about things this agent never stored, each level leaves empty:",
    ]
    for level, threshold in (gate.get("thresholds") or {}).items():
        n = int(cut.get(level, 0))
        mark = "  ← in force" if level == precision.get("level") and not precision.get("overridden") else ""
        if precision.get("overridden") and level == precision.get("level"):
            mark = "  ← in force (this agent's setting)"
        lines.append(f"    {level:9} threshold {threshold:.3f}: {n}/{probes} ({n / (probes or 1):.0%}){mark}")
    if result.get("storage"):
        lines.append(f"  note: {result['storage']}")
    return lines


def cmd_calibrate(args: argparse.Namespace, settings: Settings) -> int:
    """Calibrate one agent, or every agent that needs it, and say what the gate now does."""
    with _open_memory(settings, background=True) as memory:
        if not memory.wait_until_ready(timeout=MODEL_WAIT_SECONDS):
            print(
                "cpersona calibrate: no embedding model is ready (calibration measures cosines); see "
                "`cpersona doctor`",
                file=sys.stderr,
            )
            return 1
        agents = memory.list_agents()["agents"]
        try:
            with long_work("agents", bar=not args.json) as work:
                result = memory.calibrate(args.agent, args.precision, work=work)
        except CalibrationUnavailable as exc:
            notice = memory.agent_notice(args.agent)
            print(f"cpersona calibrate: {exc}" + (f"\nnotice: {notice}" if notice else ""), file=sys.stderr)
            return 1
    if args.json:
        _print_json(result)
        return 0
    if not result["calibrated"] and not result["skipped"]:
        print(_nothing_to_calibrate(agents))
    for one in result["calibrated"]:
        for line in format_calibration(one):
            print(line)
    for agent, why in result["skipped"].items():
        print(f"agent {agent!r} skipped: {why}")
    return 0


def _nothing_to_calibrate(agents: list[dict[str, Any]]) -> str:
    """Why ``calibrate`` found nothing due, true to the database: no agent, none big enough, all current."""
    from cpersona.retrieval.calibration import MIN_ROWS

    if not agents:
        return "nothing to calibrate: no agent has stored anything yet"
    if all(a["memories"] < MIN_ROWS for a in agents):
        most = max(a["memories"] for a in agents)
        return (
            f"nothing to calibrate: calibration needs {MIN_ROWS} memories and no agent has that many yet "
            f"(the most is {most}); until then recall runs the uncalibrated gate, and only returns rows "
            "with evidence"
        )
    return f"nothing to calibrate: every agent with {MIN_ROWS} or more memories is calibrated and current"


def _print_tree(value: Any, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                print(f"{pad}{key}:")
                _print_tree(item, indent + 1)
            else:
                print(f"{pad}{key}: {item if item not in (None, {}, []) else '-'}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                print(f"{pad}-")
                _print_tree(item, indent + 1)
            else:
                print(f"{pad}- {item}")
    else:
        print(f"{pad}{value}")


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    """Print database counts, embedding state and queue depth."""
    with _open_memory(settings, background=True) as memory:
        # Let the model load attempt settle so the embedding state is a finding, not "loading".
        memory.wait_until_ready(timeout=MODEL_WAIT_SECONDS)
        result = memory.stats()
    if args.json:
        _print_json(result)
    else:
        _print_tree({k: v for k, v in result.items() if k != "ok"})
    return 0


def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    """Re-embed rows whose vectors are missing or come from another model/dimension.

    Exit 0 when done, 2 when the model cannot load because of the configuration (an
    unsupported CPERSONA_EMBEDDING_DIM), 1 for any other fault (model not installed, ...).
    """
    from cpersona.embed.runtime.base import FaultKind

    with _open_memory(settings, background=False) as memory, long_work("rows", bar=not args.json) as work:
        result = memory.reembed(work=work)
    if args.json:
        _print_json(result)
    elif result.get("ok"):
        line = f"re-embedded {result['processed']} of {counted(result['queued'], 'queued row')}"
        if result.get("remaining"):
            line += f"; {result['remaining']} still queued (retried later; `cpersona stats` shows the queue)"
        print(line)
    else:
        print(f"cpersona reembed: {result.get('error')}", file=sys.stderr)
    if result.get("ok"):
        return 0
    return EXIT_CONFIG if result.get("fault") == FaultKind.MISCONFIGURED else 1


# -- parser ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree (also read by tests/test_docs.py to check every command is documented)."""
    parser = argparse.ArgumentParser(
        prog="cpersona",
        description="Persistent memory for AI agents over MCP. Without a command, runs `serve`.",
    )
    parser.add_argument("--version", action="version", version=f"cpersona {__version__}")
    parser.set_defaults(func=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the MCP server (default command)")
    serve.add_argument(
        "--transport",
        choices=["stdio", "streamable-http"],
        help="transport (default: CPERSONA_TRANSPORT or stdio)",
    )
    serve.add_argument("--host", help="HTTP bind address (default: CPERSONA_HTTP_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default: CPERSONA_HTTP_PORT or 8402)")
    serve.set_defaults(func=cmd_serve)

    store = sub.add_parser("store", help="store one memory")
    store.add_argument("agent", help="agent id")
    store.add_argument("content", help="text to remember ('-' reads standard input)")
    store.add_argument("--msg-id", help="stable message id (a second store with it is skipped)")
    store.add_argument("--project", help="project id (default: the global pool)")
    store.add_argument("--channel", help="channel")
    store.add_argument("--json", action="store_true", help="print the raw JSON result")
    store.set_defaults(func=cmd_store)

    recall = sub.add_parser("recall", help="search memories; best match printed last, marked ★ best")
    recall.add_argument("agent", help="agent id")
    recall.add_argument("query", nargs="?", default="", help="what to look for (empty: most recent)")
    recall.add_argument(
        "--limit",
        type=int,
        default=RECALL_LIMIT_DEFAULT,
        help=f"maximum results (0..{RECALL_LIMIT_MAX}, default {RECALL_LIMIT_DEFAULT})",
    )
    recall.add_argument("--project", help="project scope (X sees X plus the global pool)")
    recall.add_argument("--channel", help="channel scope")
    recall.add_argument("--deep", action="store_true", help="ignore time decay")
    recall.add_argument("--full", action="store_true", help="print whole contents")
    recall.add_argument("--json", action="store_true", help="print the raw JSON result")
    recall.add_argument(
        "--trace", action="store_true", help="print the JSON result with each stage's candidates and scores"
    )
    recall.add_argument(
        "--record",
        action="store_true",
        help="count this as an agent's recall: update recall_count / last_recalled_at, so the rows it "
        "returns rank lower (recent-recall penalty) in the next few minutes. Without it the CLI only "
        "looks and changes nothing a later recall sees",
    )
    recall.add_argument(
        "--include-superseded",
        action="store_true",
        help="also return memories a newer one superseded (each marked with what superseded it)",
    )
    add_time_cue_arguments(recall)
    recall.set_defaults(func=cmd_recall)

    calibrate = sub.add_parser(
        "calibrate",
        help="calibrate the recall gate now (one agent, or every agent that needs it)",
        description="Measure an agent's corpus and set its quality gate now (the same as the "
        "calibrate_threshold tool). Without --agent, every agent the self-calibration schedule finds "
        "due (uncalibrated with at least 10 memories, grown since its last calibration, or calibrated "
        "for another model) is calibrated, whatever CPERSONA_AUTO_CALIBRATE says.",
    )
    calibrate.add_argument("--agent", help="the agent to calibrate (default: every agent that needs it)")
    calibrate.add_argument(
        "--precision",
        choices=["strict", "balanced", "lenient"],
        help="save this precision for the agent(s) first (strict cuts more, lenient less)",
    )
    calibrate.add_argument("--json", action="store_true", help="print the raw JSON result")
    calibrate.set_defaults(func=cmd_calibrate)

    stats = sub.add_parser("stats", help="database counts, embedding state, queue depth")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(func=cmd_stats)

    reembed = sub.add_parser("reembed", help="re-embed rows with missing or other-model vectors (blocking)")
    reembed.add_argument("--json", action="store_true", help="print the raw JSON result")
    reembed.set_defaults(func=cmd_reembed)

    add_model_commands(sub)
    add_health_commands(sub)
    add_port_commands(sub)
    add_ui_command(sub)
    add_acl_commands(sub)
    add_chain_commands(sub, _open_memory)
    add_register_command(sub)
    return parser


def command_names(parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Names of every subcommand the parser knows."""
    parser = parser or build_parser()
    for action in parser._actions:  # argparse offers no public accessor for subparsers
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


#: Exit code when the reader of stdout closed it early (`cpersona stats | head -3`): 128 + SIGPIPE,
#: what a command killed by SIGPIPE reports.
EXIT_BROKEN_PIPE = 141


def _reader_went_away() -> int:
    """stdout's reader closed the pipe: exit quietly, with no traceback and no exit-time flush error."""
    # Python flushes stdout again at exit; point it at /dev/null so that flush has nowhere to fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


class PlainFormatter(logging.Formatter):
    """Log lines as a person reads them on stderr: ``cpersona: <message>``, with ``warning:`` or
    ``error:`` in front when they are one; no logger names (they are for ``--debug`` readers, not
    for the person at the keyboard)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
        return f"cpersona: {level}{text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.func is None:  # no command given: serve, as MCP hosts launch plain `cpersona`
        args = parser.parse_args(["serve"])
    handler = logging.StreamHandler(sys.stderr)  # stdout belongs to MCP JSON-RPC in stdio mode
    handler.setFormatter(PlainFormatter())
    logging.basicConfig(
        level=logging.INFO if args.command == "serve" else logging.WARNING, handlers=[handler]
    )
    secret_logs.install()  # no credential reaches a log line (docs/secrets-and-forgetting.md)
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        print(f"cpersona: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        code = int(args.func(args, settings) or 0)
        sys.stdout.flush()  # surface a closed pipe here, not in the interpreter's exit-time flush
        return code
    except BrokenPipeError:
        return _reader_went_away()
    except ConfigError as exc:  # a flag outside its setting's bounds (e.g. --port -1), as from the env
        print(f"cpersona: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except Cancelled as exc:  # a long command stopped by Ctrl-C at a batch boundary (cli/progress.py)
        print(f"cpersona: {exc}", file=sys.stderr)
        if " again " not in str(exc):  # each hint once: import's own message already says it
            print(f"cpersona: {RUN_AGAIN}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except CPersonaError as exc:
        print(f"cpersona: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def entry() -> NoReturn:
    """The ``cpersona`` console script (and ``python -m cpersona``): ``main()``, then exit.

    Everything the command opened is closed by the time ``main()`` returns; what is left is the
    interpreter's exit-time garbage collection over the whole heap (the MCP SDK's and pydantic's
    types, numpy, the model's session): 0.5-1 s of a process that is only ending, which every MCP
    client that closes the server's stdin and every shell running a command waits out. Freezing
    the heap skips that pass; atexit handlers, stream flushes and plain deallocation still run.
    Not in ``main()`` itself, which tests call in-process.
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
