"""Every MCP tool, resource, prompt and CLI command is documented (README.md plus docs/*.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cpersona.cli.main import build_parser, command_names
from cpersona.server.prompts import PROMPTS, PromptSpec
from cpersona.server.tools import TOOLS
from cpersona.services.resources import AGENTS_URI, TEMPLATES

ROOT = Path(__file__).resolve().parents[1]


def documentation() -> str:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(path.read_text(encoding="utf-8") for path in files if path.exists())


def documented_commands() -> list[str]:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    return sorted(set(re.findall(r"`cpersona ([a-z][a-z-]*)", text)))


def test_docs_name_the_commands() -> None:
    # Guard against the parametrised test below silently running on nothing.
    assert {"serve", "store", "recall", "stats", "fetch-model", "models", "embed-server"} <= set(
        documented_commands()
    )


@pytest.mark.parametrize("command", documented_commands())
def test_documented_command_is_registered(command: str) -> None:
    # The converse of test_cli_command_is_documented: a command docs/cli.md promises must exist.
    assert command in command_names(build_parser()), f"`cpersona {command}` is documented but not registered"


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
def test_tool_is_documented(tool: str) -> None:
    # A backticked mention anywhere is the minimum; docs/tools.md gives each tool its own section.
    assert f"`{tool}`" in documentation(), f"tool {tool} is not documented in README.md or docs/*.md"


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
def test_tool_has_a_section_in_tools_md(tool: str) -> None:
    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    assert re.search(rf"^#+ `{re.escape(tool)}`", text, flags=re.MULTILINE), (
        f"docs/tools.md lacks a {tool} section"
    )


@pytest.mark.parametrize("command", command_names(build_parser()))
def test_cli_command_is_documented(command: str) -> None:
    assert f"cpersona {command}" in documentation(), f"`cpersona {command}` is not documented"


def resources_md() -> str:
    return (ROOT / "docs" / "resources.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("uri", [AGENTS_URI, *(t.uri_template for t in TEMPLATES)])
def test_resource_is_documented_in_resources_md(uri: str) -> None:
    assert re.search(rf"^\| `{re.escape(uri)}` \|", resources_md(), flags=re.MULTILINE), (
        f"docs/resources.md lacks a table row for {uri}"
    )


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: p.name)
def test_prompt_has_a_section_with_its_arguments(prompt: PromptSpec) -> None:
    text = resources_md()
    start = re.search(rf"^### `{re.escape(prompt.name)}`$", text, flags=re.MULTILINE)
    assert start is not None, f"docs/resources.md lacks a {prompt.name} section"
    end = text.find("\n#", start.end())
    body = text[start.end() : end if end > 0 else len(text)]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| (yes|no) \|", body, flags=re.MULTILINE))
    assert rows == {a.name: "yes" if a.required else "no" for a in prompt.arguments}


def test_resources_md_is_linked_from_the_readme() -> None:
    assert "(docs/resources.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
