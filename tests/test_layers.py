"""Import direction between the package's layers, and no import cycles.

The rules are import-linter contracts in pyproject.toml (``[tool.importlinter]``): the layers, no
cycles among the modules of any package, who may import the MCP SDK, an engine or a database driver.
``test_the_import_contracts_hold`` runs ``lint-imports``, so the README's test command enforces them.
What a contract cannot say is checked here on the same import graph (grimp, which import-linter
builds on): an allow-list (the browser view), a cycle through a package's ``__init__``, the
benchmarks (scripts, not a package), and that not even a comment names a driver outside its engine.
Function-level (lazy) and TYPE_CHECKING imports count everywhere.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "cpersona"
BENCHMARKS = ROOT / "benchmarks"
ALL_MODULES = sorted(PACKAGE_DIR.rglob("*.py"))
ENGINES = {"sqlite": "cpersona.storage.sqlite", "postgres": "cpersona.storage.postgres"}
ENGINE_DRIVERS = {"sqlite": ("sqlite3",), "postgres": ("psycopg", "psycopg_pool")}


@cache
def graph() -> grimp.ImportGraph:
    # External packages are squashed to their top-level name (``mcp``, ``sqlite3``).
    return grimp.build_graph("cpersona", include_external_packages=True, cache_dir=None)


def imports_of(module: str) -> set[str]:
    return set(graph().find_modules_directly_imported_by(module))


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def modules_under(package: str) -> list[str]:
    return sorted(m for m in graph().modules if within(m, package))


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import cycles of ``edges``: every strongly connected set of two modules or more (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_package_has_modules() -> None:
    assert len(ALL_MODULES) > 10
    assert len(modules_under("cpersona.server")) > 10  # the graph sees the package


def test_the_import_contracts_hold() -> None:
    # `lint-imports --no-cache`, run by this interpreter (whatever folder pip put the script in).
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    run = subprocess.run(
        [sys.executable, "-c", command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in run.stdout


def test_the_layers_contract_places_every_package() -> None:
    # A new top-level module or package must be given its floor, else no rule would cover it.
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    placed = {name.strip() for layer in layers["layers"] for name in str(layer).replace(":", "|").split("|")}
    top_level = {
        f"cpersona.{p.stem if p.is_file() else p.name}"
        for p in PACKAGE_DIR.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    }
    assert top_level - placed == set()
    assert {"cpersona.storage", "cpersona.server", "cpersona.core", "cpersona.runtime"} <= top_level


def test_no_import_cycles_in_the_package() -> None:
    # Stricter than the contract (acyclic_siblings): a loop through a package's __init__ counts too.
    internal = [m for m in graph().modules if within(m, "cpersona")]
    edges = {m: [t for t in imports_of(m) if within(t, "cpersona")] for m in internal}
    cycles = strongly_connected(edges)
    assert cycles == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    # Guard against a check that silently finds nothing.
    assert strongly_connected({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert strongly_connected({"a": ["b"], "b": []}) == []


def benchmark_imports(path: Path, siblings: set[str]) -> set[str]:
    """The sibling benchmark modules ``path`` imports (they import each other by bare name)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found & siblings


def test_no_import_cycles_in_the_benchmarks() -> None:
    for folder in sorted({p.parent for p in BENCHMARKS.rglob("*.py")}):
        scripts = {p.stem: p for p in folder.glob("*.py")}
        edges = {name: sorted(benchmark_imports(path, set(scripts))) for name, path in scripts.items()}
        assert strongly_connected(edges) == [], folder
    assert "_latency_corpus" in benchmark_imports(BENCHMARKS / "engine_latency.py", {"_latency_corpus"})


def test_the_graph_sees_relative_lazy_and_type_checking_imports() -> None:
    # Guard against a graph that silently finds nothing.
    assert {"mcp", "cpersona.server.dispatch"} <= imports_of("cpersona.server.app")  # dispatch: lazy
    assert any(within(n, "cpersona.server") for n in imports_of("cpersona.cli.serve_command"))  # lazy
    assert "cpersona.memory" in imports_of("cpersona.server.resources_prompts")  # TYPE_CHECKING only


def test_embed_is_split_into_runtime_and_install() -> None:
    # Guard against the embed contracts passing because the sub-packages vanished.
    assert (PACKAGE_DIR / "embed" / "runtime" / "onnx_backend.py").is_file()
    assert (PACKAGE_DIR / "embed" / "install" / "fetch.py").is_file()
    assert sorted(p.name for p in (PACKAGE_DIR / "embed").glob("*.py")) == [
        "__init__.py",
        "integrity.py",
        "model_hint.py",
        "registry.py",
        "selftest_spec.py",
    ]


@pytest.mark.parametrize(
    ("driver", "sample"),
    [("sqlite3", "sqlite/db.py"), ("psycopg", "postgres/sql.py"), ("psycopg_pool", "postgres/store.py")],
)
def test_only_storage_speaks_to_a_database_driver(driver: str, sample: str) -> None:
    # Stronger than the driver contracts: not even a comment outside storage/ names the driver,
    # matching `grep -rl <driver> cpersona | grep -v storage/` printing nothing. So nothing above
    # storage can know which engine is in use.
    storage = PACKAGE_DIR / "storage"
    mentions = sorted(
        str(path.relative_to(PACKAGE_DIR))
        for path in ALL_MODULES
        if not path.is_relative_to(storage) and driver in path.read_text(encoding="utf-8")
    )
    assert mentions == []
    module = "cpersona.storage." + sample.removesuffix(".py").replace("/", ".")
    assert driver in imports_of(module)  # the graph sees it


def test_the_browser_view_goes_through_memory_never_storage() -> None:
    # cpersona.ui is a client of the public API like the CLI: Memory, config, health, errors, the
    # result shapes, the ACL policy (cpersona.acl: plain Python) and the listener binding; never the storage layer (no SQL in
    # the view) nor the MCP server. An allow-list, which no import-linter contract states.
    allowed = (
        "cpersona.ui",
        "cpersona.memory",
        "cpersona.config",
        "cpersona.health",
        "cpersona.errors",
        "cpersona.result_types",
        "cpersona.core.limits",
        "cpersona.acl",
        # The HTTP plumbing it shares with the MCP transport (ASGI types, bearer tokens, loopback, refusals,
        # binding the listening socket before announcing the URL); the layers keep it below the server.
        "cpersona.http",
        # Recall's metadata in words (pure functions of a response, no storage): the CLI and the MCP
        # response say the same sentences.
        "cpersona.retrieval.explain",
        # The secret guard (pure functions of a text): an edit's confirm page shows what will be stored.
        "cpersona.secret_guard",
    )
    modules = modules_under("cpersona.ui")
    assert len(modules) >= 5, "the browser view package vanished"
    offenders = {
        m: sorted(
            n
            for n in imports_of(m)
            if within(n, "cpersona") and n != "cpersona" and not any(within(n, a) for a in allowed)
        )
        for m in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert "cpersona.acl" in imports_of("cpersona.ui.access")  # the graph sees it
    assert "cpersona.http.listen" in imports_of("cpersona.ui.server")


def test_the_acl_reads_its_files_as_plain_python() -> None:
    # The view may import cpersona.acl only because it is plain policy (the layers keep it below the
    # server, the CLI and the view; the mcp-sdk contract off the SDK). The graph sees its file readers.
    assert "tomllib" in imports_of("cpersona.acl.file")
    assert "cpersona.acl.original" in imports_of("cpersona.acl.file")


def test_the_shared_http_kit_imports_neither_front_door() -> None:
    # cpersona.http is shared by the MCP transport and the browser view only because it depends on
    # neither (the layers place it below both, the CLI and Memory; the mcp-sdk contract keeps it off
    # the SDK); its package face imports nothing.
    assert {m.rpartition(".")[2] for m in modules_under("cpersona.http")} >= {
        "asgi",
        "tokens",
        "addresses",
        "refusals",
        "listen",
    }
    assert imports_of("cpersona.http") == set()
    assert "starlette" in imports_of("cpersona.http.asgi")  # the graph sees it


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_an_engine_package_is_there(engine: str) -> None:
    # Guard against the engine contracts passing because an engine package vanished.
    assert len(modules_under(ENGINES[engine])) >= 10, f"the {engine} engine package vanished"


def test_the_shared_storage_modules_import_no_engine() -> None:
    # storage/*.py beside the engines are engine-neutral; only open_store (storage/__init__.py) picks one.
    shared = [
        m
        for m in modules_under("cpersona.storage")
        if m != "cpersona.storage" and not any(within(m, e) for e in ENGINES.values())
    ]
    assert {m.rpartition(".")[2] for m in shared} >= {"interface", "values", "scope", "columns", "sql_text"}
    offenders = {
        m: sorted(n for n in imports_of(m) if any(within(n, e) for e in ENGINES.values())) for m in shared
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert {"cpersona.storage.sqlite.store", "cpersona.storage.postgres.store"} <= imports_of(
        "cpersona.storage"
    )


@pytest.mark.parametrize("engine", sorted(ENGINE_DRIVERS))
def test_a_database_driver_is_named_only_inside_its_engine(engine: str) -> None:
    # Stronger than the driver contracts: outside its engine package not even a comment names the driver
    # (the shared modules and the other engine cannot depend on it).
    home = PACKAGE_DIR / "storage" / engine
    mentions = sorted(
        str(path.relative_to(PACKAGE_DIR))
        for path in ALL_MODULES
        if not path.is_relative_to(home)
        and any(driver in path.read_text(encoding="utf-8") for driver in ENGINE_DRIVERS[engine])
    )
    assert mentions == []
    assert any(ENGINE_DRIVERS[engine][0] in imports_of(m) for m in modules_under(ENGINES[engine]))
