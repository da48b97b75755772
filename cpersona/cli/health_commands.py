"""``cpersona checkup`` (the health-check registry, for people and cron) and ``cpersona doctor``.

Exit codes of checkup: 0 healthy, 3 degraded (warnings), 1 unhealthy (or the
database cannot be opened), 2 usage or configuration error. A run without
``--fix`` opens the store read-only and writes nothing (a PostgreSQL database
through sessions the server itself keeps read-only).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cpersona.cli.progress import long_work
from cpersona.config import Settings
from cpersona.core.work import Work
from cpersona.errors import InvalidInput

EXIT_HEALTHY = 0
EXIT_UNHEALTHY = 1
EXIT_USAGE = 2
EXIT_DEGRADED = 3
#: Seconds checkup --fix waits for the model before back-filling the queued rows.
MODEL_WAIT_SECONDS = 120.0

_EXIT = {"healthy": EXIT_HEALTHY, "degraded": EXIT_DEGRADED, "unhealthy": EXIT_UNHEALTHY}


def _run_fix(settings: Settings, agent: str | None, checks: list[str] | None, bar: bool) -> dict[str, Any]:
    from cpersona.memory import Memory

    with Memory(settings, start_background=False, self_calibration=False) as memory:
        if settings.embedding_mode != "none":
            memory.embeddings.try_load()
        # A plain dict: the CLI report adds ``backfilled``, which the API shape does not have.
        with long_work("checks", bar=bar) as work:
            result: dict[str, Any] = dict(memory.check_health(agent, fix=True, checks=checks, work=work))
        if result.get("ok") and memory.embeddings.ready:
            with long_work("tasks", bar=bar) as work:

                def after_batch(handled: int, work: Work = work) -> None:
                    work.report(handled, None, "tasks")
                    work.checkpoint("the back-fill", "the vectors written so far stay; the rest stay queued")

                result["backfilled"] = memory.drain_queue(after_batch=after_batch)
    return result


def cmd_checkup(args: argparse.Namespace, settings: Settings) -> int:
    """Run the health checks; report-only unless --fix."""
    checks = [c.strip() for c in args.checks.split(",") if c.strip()] if args.checks else None
    result: dict[str, Any]
    if args.fix:
        result = _run_fix(settings, args.agent, checks, bar=not args.json)
    else:
        from cpersona.health.checks import check_names
        from cpersona.health.standalone import report_only

        try:
            result = dict(report_only(settings, args.agent, checks))
        except InvalidInput as exc:
            result = {"ok": False, "error": str(exc), "valid_checks": check_names()}
    if not result.get("ok"):
        print(f"cpersona checkup: {result.get('error')}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    else:
        _print_checkup(result)
    return _EXIT[result["status"]]


def _print_checkup(result: dict[str, Any]) -> None:
    scope = f" (agent {result['agent_id']!r})" if result.get("agent_id") is not None else ""
    print(f"status: {result['status']}{scope}; checks: {', '.join(result['checks_run'])}")
    if result.get("notice"):
        print(f"notice: {result['notice']}")
    for f in result["findings"]:
        refs = f" [{', '.join(f['refs'][:5])}{', …' if len(f['refs']) > 5 else ''}]" if f.get("refs") else ""
        print(f"  {f['severity']:8} {f['check']}: {f['message']}{refs}")
        if f.get("fix"):
            print(f"           fix: {f['fix']}")
    for name, repaired in result.get("repairs", {}).items():
        print(f"  repaired {name}: " + ", ".join(f"{k} {v}" for k, v in repaired.items()))
    if result.get("backfilled"):
        print(f"  back-filled {result['backfilled']} embedding task(s)")
    stats = result.get("stats", {})
    wal = stats.get("wal_bytes")
    wal_text = (
        f"WAL {wal} bytes" if wal is not None else "WAL: server-wide on PostgreSQL, not a file of its own"
    )
    print(
        f"database: {stats.get('db_path')} ({stats.get('db_bytes', 0)} bytes, {wal_text}); "
        f"queue depth {stats.get('queue_depth', 0)}"
    )
    if result.get("fix"):
        return
    # Suggest --fix only for what it repairs: each finding carries the registry's "fixable" bit.
    repairable = sorted({f["check"] for f in result["findings"] if f.get("fixable")})
    if repairable:
        print(f"run `cpersona checkup --fix` to repair: {', '.join(repairable)}")
    if any(not f.get("fixable") and f["severity"] != "info" for f in result["findings"]):
        which = "the other findings" if repairable else "these findings"
        print(f"`--fix` cannot repair {which}: follow the fix: line under each")


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    """One screen: the database, the model, the transport, and what to do next."""
    from cpersona.health.standalone import doctor_report

    report = doctor_report(settings)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2, default=str))
        return 0
    db, emb, tr = report["database"], report["embedding"], report["transport"]
    print(f"database   {report['db_path']}")
    if db.get("exists"):
        wal = (
            f"+ WAL {db['wal_bytes']}"
            if db["wal_bytes"] is not None
            else "PostgreSQL: WAL and free space are server-wide"
        )
        print(
            f"           {db['bytes']} bytes ({wal}), schema {db['schema_version']}"
            f"/{db['latest_schema_version']}, queue depth {db['queue_depth']}"
        )
    else:
        print(f"           {db.get('problem') or 'not created yet'}")
    model = emb.get("model") or emb.get("url") or ""
    print(f"embedding  mode {emb['mode']} {model}".rstrip())
    if "installed" in emb:
        print(f"           installed: {'yes' if emb['installed'] else 'no'} ({emb.get('model_dir', '-')})")
    print(
        f"           loaded: {'yes' if emb['loaded'] else 'no'} (state {emb['state']})"
        + (f", {emb['dimension']}-d" if emb.get("dimension") else "")
    )
    if emb.get("query_kernel"):
        print(f"           recall queries: {emb['query_kernel']}")
    if emb.get("problem"):
        print(f"           problem: {emb['problem']}")
        if emb.get("evidence"):  # e.g. the self-test's failing pair and its cosines
            print(f"           evidence: {emb['evidence']}")
        print("           fix: see `next` below" if emb.get("fix_steps") else f"           fix: {emb['fix']}")
    print(
        f"transport  {tr['transport']}; http {tr['http']}; auth token {tr['auth_token']}; "
        f"unauthenticated http {'allowed' if tr['allow_unauthenticated_http'] else 'refused'}"
        + (f"; ACL {tr['acl_file']}" if tr["acl_file"] else "")
    )
    chosen = report["settings"]
    state = (
        "" if chosen["file_exists"] else " (none yet; `cpersona fetch-model` writes the model choice there)"
    )
    print(f"settings   file {chosen['file']}{state}")
    for row in chosen["chosen"]:
        origin = "settings file" if row["origin"].startswith("settings file") else row["origin"]
        print(f"           {row['name']}={row['value']}  ({origin})")
    if not chosen["chosen"]:
        print("           every setting at its default (none set in the environment or the file)")
    print("next")
    for step in report["next_steps"]:
        print(f"  - {step}")
    return 0


def add_health_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``checkup`` and ``doctor`` on the main parser."""
    checkup = subparsers.add_parser(
        "checkup", help="run the health checks (exit 0 healthy, 3 degraded, 1 unhealthy); --fix repairs"
    )
    checkup.add_argument("--fix", action="store_true", help="repair what can be repaired (never locked rows)")
    checkup.add_argument("--agent", help="only check this agent's rows")
    checkup.add_argument("--checks", help="comma-separated check names (default: all)")
    checkup.add_argument("--json", action="store_true", help="print the JSON report")
    checkup.set_defaults(func=cmd_checkup)
    doctor = subparsers.add_parser("doctor", help="what is configured, what works, what to do next")
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.set_defaults(func=cmd_doctor)
