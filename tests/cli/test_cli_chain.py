"""`cpersona recall` with a time cue and `--include-superseded`, `cpersona history`, `cpersona links`.

The store is seeded in-process once per module (keyword-only: what is tested is the command line's
mapping onto ``Memory.recall`` / ``get_history`` / ``traverse``, whose ranking has its own tests); the
commands run in-process through ``cpersona.cli.main.main`` (the console script's entry point), and
once through the real console script.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_cli_commands import run

from cpersona.cli.main import main
from cpersona.config import Settings
from cpersona.memory import Memory

AGENT, OTHER = "chain-agent", "chain-other"
#: Runs one command line in-process: (exit code, stdout, stderr).
Cli = Callable[..., tuple[int, str, str]]


@dataclass
class Store:
    tmp: Path
    ids: dict[str, int]


def _settings(tmp: Path) -> Settings:
    return Settings(db_path=tmp / "memory.db", embedding_mode="none", update_check=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    tmp = tmp_path_factory.mktemp("cli-chain")
    with Memory(_settings(tmp), start_background=False) as memory:
        ids = {"may": memory.store(AGENT, "The kiln runs on propane", timestamp="2023-05-08T10:00:00Z")["id"]}
        ids["june"] = memory.store(
            AGENT,
            "The kiln runs on natural gas",
            timestamp="2023-06-20T10:00:00Z",
            supersedes=[f"mem:{ids['may']}"],
        )["id"]
        ids["july"] = memory.store(
            AGENT,
            "The kiln runs on electricity",
            timestamp="2023-07-02T10:00:00Z",
            supersedes=[f"mem:{ids['june']}"],
            associations=[
                {"relation": "about", "entity": "Kiln"},
                {"relation": "decided_by", "entity": "Ana"},
            ],
        )["id"]
        ids["glaze"] = memory.store(
            AGENT,
            "The kiln glaze order ships in May",
            timestamp="2023-05-15T10:00:00Z",
            associations=[
                {"relation": "about", "entity": "kiln"},
                {"relation": "see", "to": f"mem:{ids['july']}"},
            ],
        )["id"]
        ids["other"] = memory.store(OTHER, "Another agent's kiln note")["id"]
    return Store(tmp, ids)


@pytest.fixture
def cli(store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    for name in list(os.environ):
        if name.startswith(("CPERSONA_", "EMBEDDING_")):
            monkeypatch.delenv(name)
    env = {
        "CPERSONA_DB_PATH": str(store.tmp / "memory.db"),
        "CPERSONA_MODELS_DIR": str(store.tmp / "models"),
        "CPERSONA_EMBEDDING_MODE": "none",
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_AUTO_FETCH_MODEL": "false",
        "CPERSONA_OPERATING_CONTEXT": "off",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def call(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


def _refs(out: str) -> list[str]:
    return [r["ref"] for r in json.loads(out)["results"]]


def test_a_sure_period_keeps_only_its_rows_and_is_echoed(cli: Cli, store: Store) -> None:
    code, out, err = cli(
        "recall", AGENT, "kiln", "--since", "2023-05", "--until", "2023-05", "--certainty", "sure", "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    # mem:may is superseded (left out); the glaze row is May's only current row; June and July are outside.
    assert _refs(out) == [f"mem:{store.ids['glaze']}"]
    assert result["time_cue"] == {
        "start": "2023-05-01T00:00:00Z",
        "end": "2023-06-01T00:00:00Z",
        "certainty": "sure",
        "origin": "caller",
    }
    code, out, err = cli(
        "recall", AGENT, "kiln", "--since", "2023-05", "--until", "2023-05", "--certainty", "sure"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert any(
        line.startswith("time cue given: 2023-05-01 00:00:00 → 2023-06-01") and "sure" in line
        for line in lines
    )
    assert lines[-1].startswith("★ best") and "glaze" in lines[-1]


def test_the_json_cue_and_the_options_are_the_same_cue(cli: Cli, store: Store) -> None:
    by_options = cli(
        "recall", AGENT, "kiln", "--phrase", "last month", "--now", "2023-06-10T00:00:00Z", "--json"
    )
    cue = '{"phrase": "last month", "now": "2023-06-10T00:00:00Z"}'
    by_json = cli("recall", AGENT, "kiln", "--time-cue", cue, "--json")
    assert by_options[0] == by_json[0] == 0
    one, two = json.loads(by_options[1]), json.loads(by_json[1])
    assert one["time_cue"] == two["time_cue"]
    assert one["time_cue"]["phrase"] == "last month" and one["time_cue"]["certainty"] == "likely"
    assert one["time_cue"]["start"] == "2023-05-01T00:00:00Z"
    assert _refs(by_options[1]) == _refs(by_json[1])
    # A likely cue boosts, never filters: the rows outside May are still there.
    assert f"mem:{store.ids['july']}" in _refs(by_options[1])


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--certainty", "sure"), "need a period"),
        (("--time-cue", '{"phrase": "last week"}', "--since", "2023"), "takes the whole cue"),
        (("--time-cue", "{not json"), "is not JSON"),
        (("--time-cue", '["last week"]'), "must be a JSON object"),
        (("--time-cue", '{"when": "2023"}'), "unknown field"),
        (("--phrase", "sometime soon"), "not a date phrase"),
        (("--since", "yesterday-ish"), "time_cue.start"),
    ],
)
def test_a_bad_cue_exits_1_with_one_line(cli: Cli, argv: tuple[str, ...], said: str) -> None:
    code, out, err = cli("recall", AGENT, "kiln", *argv)
    assert code == 1 and out == ""
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_include_superseded_brings_the_older_rows_back_marked(cli: Cli, store: Store) -> None:
    ids = store.ids
    code, out, _ = cli("recall", AGENT, "kiln runs", "--json")
    assert code == 0 and f"mem:{ids['may']}" not in _refs(out) and f"mem:{ids['july']}" in _refs(out)
    code, out, _ = cli("recall", AGENT, "kiln runs", "--include-superseded", "--json")
    rows = {r["ref"]: r for r in json.loads(out)["results"]}
    assert rows[f"mem:{ids['may']}"]["superseded_by"] == f"mem:{ids['june']}"
    assert "superseded_by" not in rows[f"mem:{ids['july']}"]
    code, out, _ = cli("recall", AGENT, "kiln runs", "--include-superseded")
    line = next(x for x in out.splitlines() if f"mem:{ids['may']} " in x)
    assert line.endswith(f"[superseded by mem:{ids['june']}]")


def test_history_prints_the_chain_oldest_first(cli: Cli, store: Store) -> None:
    ids = store.ids
    code, out, err = cli("history", f"mem:{ids['june']}", "--agent", AGENT)
    assert code == 0, err
    head, *rows = out.splitlines()
    assert head == f"3 memories in the chain of mem:{ids['june']}, oldest first; current: mem:{ids['july']}"
    assert [r.split()[0 if r.startswith(" ") else 1] for r in rows] == [
        f"mem:{ids[k]}" for k in ("may", "june", "july")
    ]
    assert f"superseded by mem:{ids['june']} on 20" in rows[0]
    assert rows[1].endswith("◀") and rows[2].startswith("current") and "superseded" not in rows[2]
    code, out, _ = cli("history", str(ids["may"]), "--json")  # a bare id; any agent without --agent
    with Memory(_settings(store.tmp), start_background=False) as memory:
        assert json.loads(out) == json.loads(json.dumps(memory.get_history(ids["may"])))
    code, out, err = cli("history", f"mem:{ids['june']}", "--agent", OTHER)
    assert code == 1 and "not found" in err and out == ""
    single = cli("history", f"mem:{ids['glaze']}")
    assert single[1].startswith("1 memory in the chain") and "current" in single[1]


def test_links_walks_from_an_entity_or_a_memory(cli: Cli, store: Store) -> None:
    ids = store.ids
    code, out, err = cli("links", "KILN", "--agent", AGENT, "--depth", "1")
    assert code == 0, err
    assert out.splitlines()[0] == "2 reached from entity:Kiln (both, up to 1 hop(s))"
    assert f"mem:{ids['july']} ({AGENT})" in out and f"mem:{ids['glaze']} ({AGENT})" in out
    assert f"via mem:{ids['glaze']} -about-> entity:kiln" in out
    code, out, _ = cli("links", f"mem:{ids['july']}", "--agent", AGENT, "--direction", "in", "--json")
    assert [r["ref"] for r in json.loads(out)["results"]] == [f"mem:{ids['glaze']}"]
    code, out, _ = cli(
        "links", f"mem:{ids['july']}", "--agent", AGENT, "--direction", "out", "--relation", "decided_by"
    )
    assert "entity 'Ana'" in out and "Kiln" not in out
    code, out, _ = cli(
        "links", f"mem:{ids['glaze']}", "--agent", AGENT, "--depth", "2", "--limit", "2", "--json"
    )
    walked = json.loads(out)
    with Memory(_settings(store.tmp), start_background=False) as memory:
        same = memory.traverse(AGENT, f"mem:{ids['glaze']}", depth=2, limit=2)
    assert walked == json.loads(json.dumps(same)) and walked["truncated"] is True
    code, out, _ = cli("links", f"mem:{ids['glaze']}", "--agent", AGENT, "--limit", "2")
    assert "stopped at --limit" in out.splitlines()[0]
    code, out, err = cli("links", "Kiln", "--agent", AGENT, "--depth", "9")
    assert code == 1 and "depth must be an integer from 1 to 5" in err


@pytest.mark.slow
def test_the_console_script_prints_a_history(store: Store) -> None:
    done = run(store.tmp, "history", f"mem:{store.ids['may']}", "--agent", AGENT)
    assert done.returncode == 0, done.stderr
    assert f"current: mem:{store.ids['july']}" in done.stdout.splitlines()[0]
