"""Import direction between the package's layers, checked by parsing every module's imports with ``ast``.

The core (storage, retrieval, embed, health) must not depend on the MCP or CLI
layers; storage sits below retrieval; only server/ and cli/ may touch the MCP SDK.
Function-level (lazy) imports count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "cpersona"
CORE = ("storage", "retrieval", "embed", "health")
MCP_MODULES = ("mcp", "mcp_types")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            names.add(target)
            # `from cpersona import server` imports cpersona.server too.
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


def modules_in(*subpackage: str) -> list[Path]:
    base = PACKAGE_DIR.joinpath(*subpackage)
    return sorted(base.rglob("*.py")) if base.is_dir() else []


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


ALL_MODULES = sorted(PACKAGE_DIR.rglob("*.py"))


def test_the_package_has_modules() -> None:
    assert len(ALL_MODULES) > 10


@pytest.mark.parametrize("layer", CORE)
def test_core_layers_never_import_server_or_cli(layer: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if within(n, "cpersona.server") or within(n, "cpersona.cli")
        )
        for path in modules_in(layer)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_storage_never_imports_retrieval() -> None:
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if within(n, "cpersona.retrieval")
        )
        for path in modules_in("storage")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_embed_runtime_never_imports_install() -> None:
    # A process that only embeds must not depend on the download/archive code.
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if within(n, "cpersona.embed.install")
        )
        for path in modules_in("embed", "runtime")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("shared", ["registry.py", "integrity.py", "selftest_spec.py", "model_hint.py"])
def test_embed_shared_modules_import_neither_side(shared: str) -> None:
    names = imported_modules(PACKAGE_DIR / "embed" / shared)
    assert (
        sorted(n for n in names if within(n, "cpersona.embed.runtime") or within(n, "cpersona.embed.install"))
        == []
    )


def test_embed_is_split_into_runtime_and_install() -> None:
    # Guard against the rule above passing because the sub-packages vanished.
    assert (PACKAGE_DIR / "embed" / "runtime" / "onnx_backend.py").is_file()
    assert (PACKAGE_DIR / "embed" / "install" / "fetch.py").is_file()
    assert sorted(p.name for p in (PACKAGE_DIR / "embed").glob("*.py")) == [
        "__init__.py",
        "integrity.py",
        "model_hint.py",
        "registry.py",
        "selftest_spec.py",
    ]


def test_only_server_and_cli_import_mcp() -> None:
    allowed = (PACKAGE_DIR / "server", PACKAGE_DIR / "cli")
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if any(within(n, m) for m in MCP_MODULES)
        )
        for path in ALL_MODULES
        if not any(path.is_relative_to(a) for a in allowed)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_checker_sees_relative_and_lazy_imports() -> None:
    # Guard against a checker that silently finds nothing: parse a known sample.
    sample = PACKAGE_DIR / "server" / "app.py"
    names = imported_modules(sample)
    assert "mcp.server.lowlevel" in names and "cpersona.server.dispatch" in names
    assert any(
        within(n, "cpersona.server") for n in imported_modules(PACKAGE_DIR / "cli" / "serve_command.py")
    )


@pytest.mark.parametrize(
    ("driver", "sample"),
    [("sqlite3", "sqlite/db.py"), ("psycopg", "postgres/sql.py"), ("psycopg_pool", "postgres/store.py")],
)
def test_only_storage_speaks_to_a_database_driver(driver: str, sample: str) -> None:
    # Stronger than an import check: not even a comment outside storage/ names the driver,
    # matching `grep -rl <driver> cpersona | grep -v storage/` printing nothing. So nothing above
    # storage can know which engine is in use.
    storage = PACKAGE_DIR / "storage"
    importers = sorted(
        str(path.relative_to(PACKAGE_DIR))
        for path in ALL_MODULES
        if not path.is_relative_to(storage) and any(within(n, driver) for n in imported_modules(path))
    )
    mentions = sorted(
        str(path.relative_to(PACKAGE_DIR))
        for path in ALL_MODULES
        if not path.is_relative_to(storage) and driver in path.read_text(encoding="utf-8")
    )
    assert importers == [] and mentions == []
    assert any(within(n, driver) for n in imported_modules(storage / sample))  # the checker sees it


@pytest.mark.parametrize(
    "upper",
    ["cpersona.embed", "cpersona.retrieval", "cpersona.memory", "cpersona.recaller", "cpersona.services"],
)
def test_storage_never_imports_upper_layers(upper: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(n for n in imported_modules(path) if within(n, upper))
        for path in modules_in("storage")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_browser_view_goes_through_memory_never_storage() -> None:
    # cpersona.ui is a client of the public API like the CLI: Memory, config, health, errors, the
    # result shapes, the ACL policy (cpersona.acl: plain Python) and the listener binding; never the storage layer (no SQL in
    # the view) nor the MCP server.
    allowed = (
        "cpersona.ui",
        "cpersona.memory",
        "cpersona.config",
        "cpersona.health",
        "cpersona.errors",
        "cpersona.result_types",
        "cpersona.core.limits",
        "cpersona.acl",
        "cpersona.http.listen",  # binding the listening socket before announcing the URL (plain socket code)
        # The HTTP plumbing it shares with the MCP transport (ASGI types, bearer tokens, loopback, refusals);
        # the rule below keeps that package off the server.
        "cpersona.http",
        # Recall's metadata in words (pure functions of a response, no storage): the CLI and the MCP
        # response say the same sentences.
        "cpersona.retrieval.explain",
        # The secret guard (pure functions of a text): an edit's confirm page shows what will be stored.
        "cpersona.secret_guard",
    )
    modules = modules_in("ui")
    assert len(modules) >= 5, "the browser view package vanished"
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n
            for n in imported_modules(path)
            if within(n, "cpersona") and n != "cpersona" and not any(within(n, a) for a in allowed)
        )
        for path in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_acl_policy_module_stays_below_the_server_and_the_view() -> None:
    # The view may import cpersona.acl only because it is plain policy: it must never reach back into the
    # MCP server, the CLI, the view or the MCP SDK (else the view would depend on the server through it).
    names = imported_modules(PACKAGE_DIR / "acl.py")
    forbidden = ("cpersona.server", "cpersona.cli", "cpersona.ui", *MCP_MODULES)
    assert sorted(n for n in names if any(within(n, f) for f in forbidden)) == []
    assert "tomllib" in names  # the checker sees the module's imports
    assert "cpersona.acl" in imported_modules(PACKAGE_DIR / "ui" / "access.py")
    assert not any(within(n, "cpersona.server") for p in modules_in("ui") for n in imported_modules(p))


def test_the_shared_http_kit_imports_neither_front_door() -> None:
    # cpersona.http is shared by the MCP transport and the browser view only because it depends on
    # neither (nor on the CLI, the MCP SDK or Memory); its loopback test is plain Python, as the
    # embedding client imports it.
    modules = modules_in("http")
    assert {p.name for p in modules} >= {"asgi.py", "tokens.py", "addresses.py", "refusals.py"}
    forbidden = ("cpersona.server", "cpersona.ui", "cpersona.cli", "cpersona.memory", *MCP_MODULES)
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if any(within(n, f) for f in forbidden)
        )
        for path in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert imported_modules(PACKAGE_DIR / "http" / "__init__.py") <= {"__future__"}
    assert not any(within(n, "starlette") for n in imported_modules(PACKAGE_DIR / "http" / "addresses.py"))
    assert "starlette.types" in imported_modules(PACKAGE_DIR / "http" / "asgi.py")  # the checker sees it


STORAGE = PACKAGE_DIR / "storage"
ENGINES = {"sqlite": "cpersona.storage.sqlite", "postgres": "cpersona.storage.postgres"}
ENGINE_DRIVERS = {"sqlite": ("sqlite3",), "postgres": ("psycopg", "psycopg_pool")}


@pytest.mark.parametrize(("engine", "other"), [("sqlite", "postgres"), ("postgres", "sqlite")])
def test_an_engine_never_imports_the_other(engine: str, other: str) -> None:
    # What both engines share lives beside them in storage/ (the contracts, row shapes, SQL text, scope).
    modules = modules_in("storage", engine)
    assert len(modules) >= 10, f"the {engine} engine package vanished"
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if within(n, ENGINES[other])
        )
        for path in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_shared_storage_modules_import_no_engine() -> None:
    # storage/*.py beside the engines are engine-neutral; only open_store (storage/__init__.py) picks one.
    shared = [p for p in sorted(STORAGE.glob("*.py")) if p.name != "__init__.py"]
    assert {p.name for p in shared} >= {"interface.py", "scope.py", "columns.py", "sql_text.py"}
    offenders = {
        p.name: sorted(n for n in imported_modules(p) if any(within(n, e) for e in ENGINES.values()))
        for p in shared
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    opener = imported_modules(STORAGE / "__init__.py")
    assert {
        "cpersona.storage.sqlite.store",
        "cpersona.storage.postgres.store",
    } <= opener  # the checker sees it


def test_above_storage_only_the_neutral_contracts_are_imported() -> None:
    # Services, retrieval, health, the CLI, the server reach an engine only through storage.open_store
    # and the engine-neutral modules (interface, scope, ...), so either engine can sit under them.
    offenders = {
        str(path.relative_to(PACKAGE_DIR)): sorted(
            n for n in imported_modules(path) if any(within(n, e) for e in ENGINES.values())
        )
        for path in ALL_MODULES
        if not path.is_relative_to(STORAGE)
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert any(
        within(n, "cpersona.storage") for n in imported_modules(PACKAGE_DIR / "services" / "writer.py")
    )


@pytest.mark.parametrize("engine", sorted(ENGINE_DRIVERS))
def test_a_database_driver_is_named_only_inside_its_engine(engine: str) -> None:
    # Stronger than the import rules: outside its engine package not even a comment names the driver
    # (the shared modules and the other engine cannot depend on it).
    home = STORAGE / engine
    mentions = sorted(
        str(path.relative_to(PACKAGE_DIR))
        for path in ALL_MODULES
        if not path.is_relative_to(home)
        and any(driver in path.read_text(encoding="utf-8") for driver in ENGINE_DRIVERS[engine])
    )
    assert mentions == []
    assert any(
        within(n, ENGINE_DRIVERS[engine][0])
        for p in modules_in("storage", engine)
        for n in imported_modules(p)
    )
