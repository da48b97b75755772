"""(g) Wire fuzz: JSON-RPC messages whose ``id`` takes every JSON type (null, booleans, integers small
and huge, fractions, exponents, strings, objects, arrays) and whose other members are right, wrong or
missing, sent raw to a stdio server and an HTTP server. Every request (a message with a ``method``
and an ``id`` member) must be answered exactly once: with its own id when the id is a string or an
integer, with ``id: null`` otherwise; a notification (no ``id``) must not be answered.

Over stdio the messages go in batches followed by a ``ping`` sentinel; a batch is settled when the
sentinel is answered and no reply arrived for two seconds. Over HTTP each message is one POST.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _rpc import HttpServer, HttpSession, StdioServer, server_env
from shared import SAMPLES_KEPT, Run, verdict

TITLE = "(g) wire fuzz with every JSON-RPC id type"
SUFFIXES = ["", "é", "記憶", " ", "\\", '"']
METHODS = [
    "tools/list",
    "ping",
    "tools/call",
    "resources/list",
    "no/such/method",
    "notifications/initialized",
]


def _id(rng: random.Random, unique: int) -> tuple[str, Any, bool]:
    """(kind, value, usable) for one message's id: usable ids are unique so replies can be matched."""
    kind = rng.choice(
        [
            "int",
            "string",
            "big-int",
            "negative",
            "null",
            "true",
            "false",
            "fraction",
            "exponent",
            "object",
            "array",
        ]
    )
    value: Any = {
        "int": unique,
        "string": f"s-{unique}-" + rng.choice(SUFFIXES),
        "big-int": 10**30 + unique,
        "negative": -unique,
        "null": None,
        "true": True,
        "false": False,
        "fraction": unique + 0.5,
        "exponent": float(unique),
        "object": {"id": unique},
        "array": [unique],
    }[kind]
    return kind, value, kind in ("int", "string", "big-int", "negative")


def _params(rng: random.Random, method: str) -> Any:
    if method == "tools/call":
        return rng.choice(
            [
                {"name": "recall", "arguments": {"agent_id": "wire", "query": "tea"}},
                {
                    "name": "store",
                    "arguments": {"agent_id": "wire", "message": {"content": "wire fuzz note"}},
                },
                {"name": "recall", "arguments": [1]},
                {"name": 7},
                None,
            ]
        )
    return rng.choice([None, {}, [], "x"])


def messages(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` cases: the message, its id's kind, and what answer it must get."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        kind, value, usable = _id(rng, 10_000 + n)
        method = rng.choice(METHODS)
        message: dict[str, Any] = {"jsonrpc": rng.choice(["2.0"] * 9 + ["1.0"]), "method": method}
        params = _params(rng, method)
        if params is not None:
            message["params"] = params
        notification = rng.random() < 0.08
        if not notification:
            message["id"] = value
        out.append(
            {
                "message": message,
                "kind": "notification" if notification else kind,
                "expect": None if notification else (value if usable else "null"),
            }
        )
    return out


def _line(case: dict[str, Any]) -> bytes:
    return json.dumps(case["message"], ensure_ascii=True).encode("ascii")


def over_stdio(cases: list[dict[str, Any]], work: Path, batch: int = 25) -> dict[str, Any]:
    db = work / "stdio" / "memory.db"
    db.parent.mkdir(parents=True)
    server = StdioServer(server_env(db, None), db.parent / "stderr.log")
    server.initialize()
    tally: Counter[str] = Counter()
    samples: list[dict[str, Any]] = []
    nulls_seen = 0
    for start in range(0, len(cases), batch):
        chunk = cases[start : start + batch]
        for case in chunk:
            server.send(_line(case))
        ping = server.request("ping")
        expected = [c["expect"] for c in chunk if c["expect"] not in (None, "null")]
        wanted_nulls = sum(1 for c in chunk if c["expect"] == "null")
        deadline, quiet_since, last = time.monotonic() + 60, time.monotonic(), -1
        while time.monotonic() < deadline:
            got = server.wait([*expected, ping], 0.2)
            count = server.count_replies()
            if count != last:
                last, quiet_since = count, time.monotonic()
            if ping in got and (len(got) == len(expected) + 1 or time.monotonic() - quiet_since > 2):
                break
        new_nulls, nulls_seen = server.null_replies - nulls_seen, server.null_replies
        for case in chunk:
            _score(case, server.replies, tally, samples)
        tally["null_answers"] += new_nulls
        tally["null_expected"] += wanted_nulls
        if not server.alive():
            tally["crash"] += 1
            break
    exit_code = server.close()
    return {**_summary(tally, samples), "exit_code": exit_code}


def _score(
    case: dict[str, Any], replies: dict[Any, Any], tally: Counter[str], samples: list[dict[str, Any]]
) -> None:
    expect = case["expect"]
    tally["sent"] += 1
    if expect is None:
        tally["notifications"] += 1
        return
    tally["requests"] += 1
    if expect == "null":
        return  # counted in bulk: null-id answers cannot be told apart
    if expect in replies:
        tally["answered"] += 1
    else:
        tally["unanswered"] += 1
        if len(samples) < SAMPLES_KEPT:
            samples.append({"kind": case["kind"], "message": repr(case["message"])[:300]})


def over_http(cases: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    db = work / "http" / "memory.db"
    db.parent.mkdir(parents=True)
    token = "wire-fuzz-token-" + "w" * 24
    server = HttpServer(server_env(db, None, CPERSONA_AUTH_TOKEN=token), db.parent / "server.log")
    session = HttpSession(server.url, token, timeout=60)
    tally: Counter[str] = Counter()
    samples: list[dict[str, Any]] = []
    try:
        for case in cases:
            expect = case["expect"]
            tally["sent"] += 1
            response = session.http.post(server.url, content=_line(case), headers=session.headers)
            answers = _answers(response)
            if expect is None:
                tally["notifications"] += 1
                if answers:
                    tally["answered_notification"] += 1
                continue
            tally["requests"] += 1
            if expect == "null":
                tally["null_expected"] += 1
                tally["null_answers"] += sum(1 for a in answers if a.get("id") is None)
                if not any(a.get("id") is None for a in answers):  # counted as unanswered by _summary
                    _keep(samples, case, response)
            elif any(a.get("id") == expect for a in answers):
                tally["answered"] += 1
            else:
                tally["unanswered"] += 1
                _keep(samples, case, response)
        alive = server.alive()
    finally:
        session.close()
        server.stop()
    return {**_summary(tally, samples), "server_alive_at_end": alive}


def _answers(response: Any) -> list[dict[str, Any]]:
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        out = []
        for line in response.text.replace("\r\n", "\n").split("\n"):
            if line.startswith("data:") and line[5:].strip():
                out.append(json.loads(line[5:]))
        return [a for a in out if isinstance(a, dict) and ("result" in a or "error" in a)]
    if kind.startswith("application/json") and response.content:
        value = response.json()
        return [value] if isinstance(value, dict) else []
    return []


def _keep(samples: list[dict[str, Any]], case: dict[str, Any], response: Any) -> None:
    if len(samples) < SAMPLES_KEPT:
        samples.append(
            {"kind": case["kind"], "message": repr(case["message"])[:300], "status": response.status_code}
        )


def _summary(tally: Counter[str], samples: list[dict[str, Any]]) -> dict[str, Any]:
    unanswered = tally["unanswered"] + max(0, tally["null_expected"] - tally["null_answers"])
    return {
        "sent": tally["sent"],
        "requests": tally["requests"],
        "notifications": tally["notifications"],
        "answered": tally["answered"] + min(tally["null_answers"], tally["null_expected"]),
        "unanswered": unanswered,
        "extra_null_answers": max(0, tally["null_answers"] - tally["null_expected"]),
        "answered_notifications": tally["answered_notification"],
        "crashes": tally["crash"],
        "samples": samples,
    }


def run(r: Run) -> dict[str, Any]:
    cases = messages(r.args.wire_messages, r.seed)
    kinds = Counter(c["kind"] for c in cases)
    stdio = over_stdio(cases, r.work)
    http = over_http(cases, r.work)
    bad = sum(t["unanswered"] + t["extra_null_answers"] + t["crashes"] for t in (stdio, http))
    return {
        "messages": len(cases),
        "id_kinds": dict(kinds),
        "stdio": stdio,
        "http": http,
        "passed": bad == 0
        and stdio["answered"] == stdio["requests"]
        and http["answered"] == http["requests"],
    }


def rows(g: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    out = []
    for transport in ("stdio", "http"):
        t = g[transport]
        out.append(
            [
                "(g) wire fuzz",
                f"{transport}: requests answered / unanswered / extra answers",
                f"{t['answered']} of {t['requests']} / {t['unanswered']} / {t['extra_null_answers']}",
                "all / 0 / 0",
                verdict(
                    t["answered"] == t["requests"] and t["unanswered"] == 0 and not t["extra_null_answers"]
                ),
            ]
        )
    out.append(
        [
            "(g) wire fuzz",
            "id kinds sent",
            ", ".join(f"{k} {n}" for k, n in sorted(g["id_kinds"].items())),
            "-",
            "-",
        ]
    )
    return out


def notes(g: dict[str, Any]) -> None:
    """After the table: the requests that went unanswered, if any."""
    for transport in ("stdio", "http"):
        if g[transport]["samples"]:
            print(f"\nwire {transport}: unanswered, e.g.:", *g[transport]["samples"], sep="\n  ")
