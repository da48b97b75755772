"""``cpersona export`` / ``cpersona import``: the operator's portability commands.

These are operator commands: the path is used as given (relative to the
current directory), not confined to CPERSONA_EXPORT_DIR as the MCP tools are;
``-`` is standard output (export) or standard input (import).
Progress bars go to stderr; the summary goes to stdout (``--json`` for the raw
result). Embeddings are not needed to export or import, so the model is never
loaded here; rows without a vector are queued and the server back-fills them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cpersona.cli.progress import long_work
from cpersona.config import Settings
from cpersona.core.text import counted


def _memory(settings: Settings) -> Any:
    from cpersona.memory import Memory

    # No model is loaded to move rows: rows without a vector are queued and the server back-fills them.
    return Memory(settings, start_background=False, self_calibration=False)


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Export memories, episodes and profiles (one agent with --agent, else all) to a JSONL file.

    ``-`` writes the export to standard output; the summary then goes to stderr.
    """
    with _memory(settings) as memory, long_work("rows", bar=not args.quiet) as work:
        result = memory.export_memories(
            args.agent,
            args.path,
            args.include_embeddings,
            overwrite=args.force,
            include_secrets=args.include_secrets,
            confined=False,
            work=work,
            export_format=args.format,
        )
    summary = sys.stderr if args.path == "-" else sys.stdout
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2), file=summary)
    else:
        c = result["counts"]
        where = "standard output" if args.path == "-" else result["path"]
        print(
            f"exported {counted(c['memories'], 'memory', 'memories')}, {counted(c['episodes'], 'episode')}, "
            f"{counted(c['profiles'], 'profile')} "
            f"to {where} ({result['bytes']} bytes)",
            file=summary,
        )
        if result.get("notice"):
            print(f"notice: {result['notice']}")
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Import an export file; prints counts, truncations and the first bad lines."""
    with _memory(settings) as memory, long_work("records", bar=not args.quiet) as work:
        result = memory.import_memories(args.path, args.agent, args.dry_run, confined=False, work=work)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0 if not result["error_count"] else 1
    c = result["counts"]
    verb = "would import" if result["dry_run"] else "imported"
    print(
        f"{verb}: {counted(c['memories']['inserted'], 'memory', 'memories')}, "
        f"{counted(c['episodes']['inserted'], 'episode')}, "
        f"{counted(c['profiles']['inserted'] + c['profiles']['updated'], 'profile')}"
    )
    print(
        f"already present (skipped): {counted(c['memories']['duplicates'], 'memory', 'memories')}, "
        f"{counted(c['episodes']['duplicates'], 'episode')}, {counted(c['profiles']['kept'], 'profile')}"
    )
    if result["truncated"]:
        print(f"truncated to the content cap: {result['truncated']}")
    if c.get("vectors_not_kept"):
        print(
            f"vectors not kept (a model this edition does not run; the rows are queued): {c['vectors_not_kept']}"
        )
    if c.get("not_carried"):
        print(f"no home in this edition (not imported; still in the file you imported): {c['not_carried']}")
    if result["queued_for_embedding"]:
        print(f"queued for embedding: {result['queued_for_embedding']} (the server back-fills them)")
    if result["error_count"]:
        print(f"bad lines skipped: {result['error_count']}", file=sys.stderr)
        for error in result["errors"]:
            print(f"  line {error['line']}: {error['error']}", file=sys.stderr)
    return 0 if not result["error_count"] else 1


def add_port_commands(sub: Any) -> None:
    """Register ``export`` and ``import`` on the main parser's subcommands."""
    export = sub.add_parser("export", help="export memories, episodes and profiles to a JSONL file")
    export.add_argument(
        "path",
        help="file to write ('-' is standard output; refused if it exists unless --force; "
        "a device or FIFO is never replaced)",
    )
    export.add_argument("--agent", help="export only this agent (default: every agent)")
    export.add_argument("--include-embeddings", action="store_true", help="also write vectors (base64)")
    export.add_argument(
        "--format",
        choices=("cpersona", "cpersona-1.0"),
        default="cpersona",
        help="cpersona (this edition's format, the default) or cpersona-1.0 (the original CPersona's, "
        "which its import_memories reads: the way back)",
    )
    export.add_argument("--force", action="store_true", help="replace an existing file")
    export.add_argument(
        "--include-secrets",
        action="store_true",
        help="write credentials as stored (default: as [redacted: <kind>], docs/secrets-and-forgetting.md)",
    )
    export.add_argument("--quiet", action="store_true", help="no progress bar")
    export.add_argument("--json", action="store_true", help="print the raw JSON result")
    export.set_defaults(func=cmd_export)

    imp = sub.add_parser(
        "import",
        help="import a JSONL export, or the original CPersona's export or .db file (idempotent; bad lines reported)",
    )
    imp.add_argument(
        "path",
        help="export file to read ('-' is standard input): ours, the original CPersona's "
        "(cpersona-export/1.x), or its database file",
    )
    imp.add_argument("--agent", help="store every row under this agent id")
    imp.add_argument("--dry-run", action="store_true", help="report what would be imported; write nothing")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")
    imp.add_argument("--json", action="store_true", help="print the raw JSON result")
    imp.set_defaults(func=cmd_import)
