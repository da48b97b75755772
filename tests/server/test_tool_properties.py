"""Property-based tests of the tool layer, called in-process exactly as the MCP handler calls it.

Real Memory on a real SQLite file (keyword-only). For any JSON-ish arguments
(NUL bytes, lone surrogates, FTS syntax, huge or negative numbers, malformed
ids, metadata and timestamps) every response is a dict with a boolean ``ok``,
a failure carries a non-empty ``error``, nothing escapes as an exception, the
response always encodes as strict JSON in UTF-8, and a failing call leaves
the database exactly as it was.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.runtime import persistence
from cpersona.server.dispatch import dispatch_tool
from cpersona.server.output_schemas import output_schema
from cpersona.server.tools import TOOLS, TOOLS_BY_NAME

TABLES = ("memories", "episodes", "profiles", "pending_memory_tasks")
FTS_BITS = ['"', "*", ":", "(", ")", "NEAR", "AND", "OR", "NOT", "^", "-", "+", "{", "}", "NEAR/3", "'", "\\"]
NASTY_BITS = [
    *FTS_BITS,
    "\x00",
    "\ud800",
    "\udfff",
    "\ufeff",
    "ｚｅｂｒａ",
    "記憶",
    " ",
    "\n",
    "mem:1",
    "%",
    "_",
]

nasty_text = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(NASTY_BITS), max_size=10).map(" ".join),
    st.lists(st.one_of(st.sampled_from(NASTY_BITS), st.characters(categories=["Cs"])), max_size=10).map(
        "".join
    ),
)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    nasty_text,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(nasty_text, inner, max_size=3),
    max_leaves=8,
)
ids = st.one_of(
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=1, max_value=8).map(lambda i: f"mem:{i}"),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    nasty_text,
    st.sampled_from(["mem:1", "ep:1", "mem:2", "mem:0", "ep:99999999999999999999", "1", "mem:-1"]),
)
timestamps = st.one_of(
    st.sampled_from(
        [
            "2026-01-31T09:30:00",
            "2026-01-31T09:30:00+09:00",
            "2026-01-31T09:30:00Z",
            "2026-01-31",
            "9999-12-31T23:59:59-12:00",
            "0001-01-01T00:00:00+14:00",
            "yesterday",
            "",
        ]
    ),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(),
    nasty_text,
)
metadata = st.one_of(
    st.dictionaries(nasty_text, json_value, max_size=3),
    st.sampled_from(['{"a": 1}', '{"a": ', "[1, 2]", "null", "{}", '{"x": NaN}']),
    nasty_text,
)
scope_text = st.one_of(st.sampled_from(["", "X", "Y"]), nasty_text)
agents = st.one_of(st.sampled_from(["a", "b", ""]), nasty_text)
entries = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "system", "tool", ""]), "content": nasty_text},
            optional={"timestamp": timestamps, "name": nasty_text, "user_id": nasty_text},
        ),
        json_value,
    ),
    max_size=4,
)

#: Export/import paths an agent might send: odd, too long, escaping, device-like (issue 17).
paths = st.one_of(
    st.sampled_from(
        [
            "a.jsonl",
            "sub/a.jsonl",
            "-",
            "/no-such-dir/a.jsonl",
            "/dev/stdout",
            "../up.jsonl",
            "clients/x/a.jsonl",
            ".",
        ]
    ),
    st.sampled_from(["x" * 300 + ".jsonl", "y/" * 80 + "z.jsonl", "é" * 130]),
    st.text(alphabet="ab./-_é~\\:", max_size=40),
    nasty_text,
)

PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "agent_id": agents,
    "output_path": paths,
    "input_path": paths,
    "query": nasty_text,
    "content": nasty_text,
    "summary": nasty_text,
    "profile": nasty_text,
    "limit": st.one_of(
        st.integers(min_value=0, max_value=100),
        st.integers(min_value=-(2**40), max_value=2**40),
        st.just(101),
    ),
    "deep": st.booleans(),
    "resolved": st.booleans(),
    "full_content": st.booleans(),
    "channel": scope_text,
    "project_id": scope_text,
    "user_id": scope_text,
    "source_id": scope_text,
    "exclude_contents": st.one_of(st.lists(nasty_text, max_size=3), nasty_text),
    "keywords": st.one_of(st.lists(nasty_text, max_size=3), nasty_text),
    "memory_id": ids,
    "episode_id": ids,
    "refs": st.one_of(
        st.lists(
            st.sampled_from(["mem:1", "ep:1", "mem:2", "ep:2", "mem:5", "ep:99"]), min_size=1, max_size=21
        ),
        st.lists(st.one_of(st.sampled_from(["mem:1", "ep:1"]), nasty_text), max_size=24),
    ),
    "external_context": entries,
    "time_cue": st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "start": timestamps,
                "end": timestamps,
                "phrase": st.one_of(st.sampled_from(["last week", "2023年5月", "in May 2023"]), nasty_text),
                "certainty": st.one_of(st.sampled_from(["sure", "likely", "vague"]), nasty_text),
                "now": timestamps,
            },
        ),
        json_value,
    ),
    "history": entries,
    # declare_associations / traverse / pause_persistence: without these the fuzz never reached
    # their methods (the injected-fault test below found it).
    "from": st.one_of(ids, st.sampled_from(["entity:Phoenix", "Phoenix", "entity:"]), nasty_text),
    "relation": st.one_of(st.sampled_from(["about", "decided_by", "x"]), nasty_text),
    "associations": st.lists(
        st.one_of(
            st.fixed_dictionaries({"relation": st.just("about"), "entity": st.just("Phoenix")}),
            st.fixed_dictionaries(
                {"relation": st.just("about"), "to": st.sampled_from(["mem:1", "mem:2", 3])}
            ),
            st.fixed_dictionaries(
                {"relation": st.sampled_from(["about", "decided_by", "Bad Name", ""])},
                optional={"to": ids, "entity": st.one_of(st.sampled_from(["Phoenix", " "]), nasty_text)},
            ),
            json_value,
        ),
        max_size=3,
    ),
    "supersedes": st.one_of(st.lists(ids, max_size=3), json_value),
    "ttl_seconds": st.one_of(st.integers(min_value=1, max_value=86400), st.integers()),
    "message": st.fixed_dictionaries(
        {"content": nasty_text},
        optional={
            "id": st.one_of(nasty_text, st.integers()),
            "source": st.one_of(
                st.fixed_dictionaries(
                    {}, optional={"type": nasty_text, "id": nasty_text, "name": nasty_text}
                ),
                metadata,
            ),
            "timestamp": timestamps,
            "metadata": metadata,
        },
    ),
}


def _plausible(name: str, prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """The named strategy; else one read from the property's schema (an enum's values, a bounded
    integer, a boolean, a string), mixed with any JSON so wrong types still come."""
    if name in PLAUSIBLE:
        return PLAUSIBLE[name]
    if "enum" in prop:
        return st.one_of(st.sampled_from(prop["enum"]), json_value)
    kind = prop.get("type")
    if kind == "boolean":
        return st.one_of(st.booleans(), json_value)
    if kind == "integer":
        low, high = prop.get("minimum", -(2**31)), prop.get("maximum", 2**31)
        return st.one_of(st.integers(min_value=low, max_value=high), json_value)
    if kind == "string":
        return st.one_of(agents, json_value)
    return json_value


def arguments_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly plausible arguments (so calls reach Memory), sometimes wrong-typed or with extra keys."""
    schema = TOOLS_BY_NAME[tool].input_schema
    props, required = schema["properties"], set(schema.get("required", ()))
    plausible = st.fixed_dictionaries(
        {name: _plausible(name, prop) for name, prop in props.items() if name in required},
        optional={name: _plausible(name, prop) for name, prop in props.items() if name not in required},
    )
    anything = st.fixed_dictionaries({}, optional={name: json_value for name in props})
    extra = st.dictionaries(nasty_text, json_value, min_size=1, max_size=2)
    return st.one_of(
        plausible, plausible, plausible, anything, st.builds(lambda a, b: {**b, **a}, plausible, extra)
    )


def snapshot(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every data table, read through a separate read-only connection."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in TABLES}
    finally:
        conn.close()


@functools.cache
def _output_validator(tool: str) -> Draft202012Validator:
    return Draft202012Validator(output_schema(tool))


def check_response(response: Any, tool: str | None = None) -> None:
    """A clean answer: ok, a non-empty error on failure, strict JSON; and, for a known ``tool``, an
    answer its advertised outputSchema accepts (failures included)."""
    assert isinstance(response, dict)
    assert isinstance(response.get("ok"), bool), response
    if response["ok"]:
        assert "error" not in response, response
    else:
        assert isinstance(response.get("error"), str) and response["error"].strip(), response
        # dispatch_tool turns any exception into "internal": a crash is never a clean answer (issue 36).
        assert response.get("error_code") != "internal", response
    # Strict JSON that encodes as UTF-8: no NaN, no lone surrogates.
    json.dumps(response, ensure_ascii=False, allow_nan=False).encode("utf-8")
    if tool in TOOLS_BY_NAME:
        error = best_match(_output_validator(tool).iter_errors(response))
        assert error is None, (tool, list(error.absolute_path), error.message[:300], response)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One Memory for the module with a few rows of agents 'a' and 'b' to aim ids at."""
    tmp = tmp_path_factory.mktemp("props")
    cfg = Settings(
        db_path=tmp / "memory.db",
        models_dir=tmp / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
    )
    with Memory(cfg) as memory:
        memory.wait_until_ready(5)
        for agent in ("a", "b"):
            for i in range(3):
                memory.store(agent, f"seed {agent} {i} zebra migration notes", msg_id=f"{agent}-{i}")
            memory.archive_episode(agent, f"seed episode of {agent}", keywords=["seed"])
        yield memory, cfg


def _run(seeded: Any, tool: str, arguments: Any) -> None:
    memory, cfg = seeded
    before = snapshot(cfg.db_path)
    try:
        response = dispatch_tool(memory, cfg, tool, arguments)
    finally:
        if tool == "pause_persistence":  # the pause is process-wide: the next tests must write
            persistence.PROCESS.resume()
    check_response(response, tool)
    if not response["ok"]:
        assert snapshot(cfg.db_path) == before, (tool, arguments, response)


PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_arguments_answer_cleanly(seeded: Any, tool: str, data: st.DataObject) -> None:
    _run(seeded, tool, data.draw(arguments_for(tool)))


@PROPERTY_SETTINGS
@given(name=st.one_of(nasty_text, st.sampled_from([s.name for s in TOOLS])), arguments=json_value)
def test_any_name_and_any_json_answer_cleanly(seeded: Any, name: str, arguments: Any) -> None:
    memory, cfg = seeded
    before = snapshot(cfg.db_path)
    response = dispatch_tool(memory, cfg, name, arguments)
    check_response(response, name)
    if name not in TOOLS_BY_NAME:
        assert response["ok"] is False and response["error_code"] == "unknown_tool"
    if not response["ok"]:
        assert snapshot(cfg.db_path) == before


def _fault_sites(memory: Memory, tool: str) -> list[tuple[Any, str]]:
    """Where a tool's behaviour lives: its Memory method, or what a process-wide handler calls."""
    from cpersona.runtime import operating_context
    from cpersona.server.calls import ApiCall
    from cpersona.server.update_check import UpdateChecker

    call = TOOLS_BY_NAME[tool].call
    if isinstance(call, ApiCall):
        return [(memory, call.method)]
    plain: dict[str, list[tuple[Any, str]]] = {
        "pause_persistence": [(persistence.PROCESS, "pause")],
        "resume_persistence": [(persistence.PROCESS, "resume")],
        "persistence_status": [(persistence.PROCESS, "status")],
        "get_operating_context": [(operating_context, "get")],
        "check_update": [(UpdateChecker, "report"), (UpdateChecker, "apply")],
    }
    return plain[tool]


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
def test_an_exception_injected_into_the_service_method_fails_the_fuzz(
    seeded: Any, tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fuzz above can fail: with the tool's method raising KeyError (which dispatch_tool answers
    as ``internal``), the same property over the same arguments finds a failing call (issue 36)."""
    memory, _ = seeded
    reached: list[str] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        reached.append(tool)
        raise KeyError("injected")

    for owner, name in _fault_sites(memory, tool):
        monkeypatch.setattr(owner, name, broken)

    @settings(
        max_examples=500,  # stops at the first failing call; 500 only when the method is never reached
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        _run(seeded, tool, data.draw(arguments_for(tool)))

    with pytest.raises(AssertionError, match="internal"):
        fuzz()
    assert reached


@pytest.mark.parametrize(
    "query",
    [
        "x" * 100_000,
        ('"zebra" AND (migration OR NEAR/2 "notes") * : ^ ' * 2_500)[:100_000],
        "記憶" * 50_000,
        "\x00\ud800" * 50_000,
    ],
)
def test_huge_queries_are_answered(seeded: Any, query: str) -> None:
    memory, cfg = seeded
    response = dispatch_tool(memory, cfg, "recall", {"agent_id": "a", "query": query, "limit": 100})
    check_response(response, "recall")


@pytest.mark.parametrize(
    "query", FTS_BITS + ['zebra"', '"zebra', "zebra*", "NEAR(zebra migration)", "a:b", "(("]
)
def test_fts_syntax_never_errors(seeded: Any, query: str) -> None:
    memory, cfg = seeded
    response = dispatch_tool(memory, cfg, "recall", {"agent_id": "a", "query": query})
    check_response(response, "recall")
    assert response["ok"] is True, response
