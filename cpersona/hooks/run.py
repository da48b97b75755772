"""The hook command: ``python -S …/cpersona/hooks/launch.py HOST EVENT --agent-id ID --db DB --socket PATH``
(``python -m cpersona.hooks …`` is the same command with ``site``'s start-up cost).

Never blocks the user: every path ends in exit status 0. Malformed, huge or missing input, a
missing database, an unreachable or slow server, a recall past its budget: nothing is printed
(no injection) and one line is logged (stderr, and ``--log`` when given). The fast path imports
only the stdlib: it sends the host's input to the running server's hook socket
(``endpoint``). Only when no server listens does it open the database itself, keyword-only
(no model is ever loaded by a hook), within a budget of its own (opening the database in a fresh
process costs far more than asking the warm server), and says so in the log.

``pre-compact`` prints nothing (neither host injects that event's output); it leaves a marker so
the next session-start or prompt injection of the same session carries the reminder to archive.
"""

from __future__ import annotations

import os
import sys
import time

from cpersona.hooks import endpoint, wire

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: every import costs each prompt
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

#: Seconds a hook may take before it gives up without injecting (the server's answer, or the fallback).
BUDGET_SECONDS = {"session-start": 4.0, "prompt": 1.2, "pre-compact": 1.0}
#: Seconds the in-process answer may take when no server listens (imports and opening included); the
#: hosts' own timeouts for our hooks (hosts/hooks_file.py) are longer still.
FALLBACK_SECONDS = {"session-start": 6.0, "prompt": 3.0, "pre-compact": 1.0}
USAGE = (
    "usage: python -m cpersona.hooks claude-code|codex session-start|prompt|pre-compact --agent-id ID "
    "--db DATABASE --socket PATH [--capture-prompts] [--log FILE] [--budget SECONDS]"
)
_VALUED = ("--agent-id", "--db", "--socket", "--log", "--budget")


class HookArgs:
    """The hook's command line (parsed by hand: argparse and its gettext cost more than the rest)."""

    __slots__ = ("agent_id", "budget", "capture_prompts", "db", "event", "host", "log", "socket")

    def __init__(self, argv: Sequence[str]) -> None:
        """Parse ``argv``; ValueError with the reason when it is not the command register writes."""
        values: dict[str, str] = {}
        flags: set[str] = set()
        positional: list[str] = []
        items = list(argv)
        while items:
            item = items.pop(0)
            name, has_value, inline = item.partition("=")
            if name in _VALUED:
                if not has_value:
                    if not items:
                        raise ValueError(f"{name} needs a value")
                    inline = items.pop(0)
                values[name] = inline
            elif item == "--capture-prompts":
                flags.add(item)
            elif item.startswith("--"):
                raise ValueError(f"unknown option {item}")
            else:
                positional.append(item)
        if len(positional) != 2:
            raise ValueError("expected HOST EVENT")
        self.host, self.event = positional
        if self.host not in wire.HOSTS:
            raise ValueError(f"unknown host {self.host!r}")
        if self.event not in wire.EVENTS:
            raise ValueError(f"unknown event {self.event!r}")
        missing = [n for n in ("--agent-id", "--db", "--socket") if not values.get(n)]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        self.agent_id = values["--agent-id"]
        self.db = values["--db"]
        self.socket = values["--socket"]
        self.log = values.get("--log")
        self.capture_prompts = "--capture-prompts" in flags
        self.budget = float(values["--budget"]) if "--budget" in values else None


class _Log:
    def __init__(self, host: str, event: str, path: str | None) -> None:
        self.prefix = f"cpersona hook {host} {event}"
        self.path = path

    def line(self, message: str) -> None:
        text = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {self.prefix}: {message}"
        try:  # noqa: SIM105 - contextlib is one more import on every prompt
            print(text, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a closed stderr must not fail the hook
            pass
        if self.path:
            try:
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(text + "\n")
            except OSError:
                pass


def marker_path(socket: str, session_id: str) -> str:
    """The file PreCompact leaves for ``session_id`` beside the hook socket."""
    import binascii

    stem = socket[: -len(".sock")] if socket.endswith(".sock") else socket
    # A checksum, not a hash: a marker only says "remind this session once"; binascii is built in.
    return f"{stem}.{binascii.crc32(session_id.encode('utf-8')):08x}.compacted"


def _mark_compaction(socket: str, session_id: str) -> None:
    os.makedirs(os.path.dirname(socket) or ".", mode=0o700, exist_ok=True)
    with open(marker_path(socket, session_id), "a", encoding="utf-8"):
        pass


def _take_marker(socket: str, session_id: str) -> bool:
    try:
        os.unlink(marker_path(socket, session_id))
    except OSError:
        return False
    return True


def _in_process(request: dict[str, Any], database: str) -> tuple[dict[str, Any], Callable[[], None] | None]:
    """Answer without a server: open the database keyword-only (no model) and answer as the server would."""
    if "://" not in database and not os.path.isfile(database):
        raise FileNotFoundError(f"no database at {database}")
    if sys.flags.no_site:  # started with -S (launch.py): NumPy and the engine live in site-packages
        import site

        site.main()
    from pathlib import Path

    from cpersona.config import Settings
    from cpersona.hooks.answer import respond
    from cpersona.memory import Memory

    where = {"db_url": database} if "://" in database else {"db_path": Path(database), "db_url": None}
    settings = Settings.from_env().with_overrides(embedding_mode="none", **where)
    memory = Memory(settings, start_background=False, self_calibration=False)
    answer, after = respond(memory, settings, request)

    def then() -> None:
        try:
            if after is not None:
                after()
        finally:
            memory.close()

    return answer, then


def _within(budget: float, work: Callable[[], Any]) -> Any:
    """``work()``'s result, or TimeoutError when it is not done within ``budget`` seconds."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="cpersona-hook-work", daemon=True)
    thread.start()
    thread.join(budget)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {budget:.1f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def run(argv: Sequence[str], stdin: Any, stdout: Any) -> int:
    """The hook; returns 0 whatever happens (the caller exits with it)."""
    try:
        args = HookArgs(argv)
    except ValueError as exc:
        print(f"cpersona hook: {exc}; nothing injected\n{USAGE}", file=sys.stderr)
        return 0
    log = _Log(args.host, args.event, args.log)
    started = time.monotonic()
    budget = args.budget if args.budget is not None else BUDGET_SECONDS[args.event]
    fallback = args.budget if args.budget is not None else FALLBACK_SECONDS[args.event]
    try:
        raw = stdin.buffer.read(wire.MAX_INPUT_BYTES + 1) if stdin is not None else b""
        data = wire.parse_input(raw, args.event)
    except (wire.HookInputError, OSError, ValueError) as exc:
        log.line(f"input refused, nothing injected: {exc}")
        return 0
    socket = args.socket
    if args.event == "pre-compact":
        try:
            _mark_compaction(socket, data.session_id)
        except OSError as exc:
            log.line(f"could not leave the compaction marker: {exc}")
        return 0
    request = {
        **data.as_json(),
        "agent_id": args.agent_id,
        "capture": bool(args.capture_prompts),
        "compacted": _take_marker(socket, data.session_id),
    }
    try:
        answer = endpoint.ask(socket, request, budget)
    except endpoint.Unreachable as exc:
        left = fallback - (time.monotonic() - started)
        try:
            answer, after = _within(left, lambda: _in_process(request, args.db))
            if after is not None:
                _within(max(0.1, fallback - (time.monotonic() - started)), after)
        except Exception as error:
            log.line(f"no server at {socket} and the in-process answer failed, nothing injected: {error}")
            return 0
        log.line(f"no server at {socket} ({exc}): answered in-process, keyword-only (no model in a hook)")
    except TimeoutError:
        log.line(f"the server did not answer within {budget:.1f} s, nothing injected")
        return 0
    except (OSError, ValueError) as exc:
        log.line(f"the server's answer was unusable, nothing injected: {exc}")
        return 0
    context = answer.get("context")
    text = wire.render_output(args.event, context if isinstance(context, str) else None)
    if text:
        stdout.write(text + "\n")
        stdout.flush()
    return 0


def main() -> None:
    """Console entry: run the hook, then leave at once (a timed-out worker thread must not hold us)."""
    try:
        code = run(sys.argv[1:], sys.stdin, sys.stdout)
    except BaseException as exc:  # the last guard: a hook never fails the host
        print(f"cpersona hook: unexpected failure, nothing injected: {exc!r}", file=sys.stderr)
        code = 0
    try:
        sys.stdout.flush()
    finally:
        os._exit(code)
