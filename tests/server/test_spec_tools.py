"""The tool registry against the specification's list of 30 tools (docs/tools.md) (issue 7 item 8).

``SPEC_TOOL_NAMES`` (tests/server/mcp_helpers.py) is written out from the spec, not derived
from the registry, so a tool added or dropped without the spec's say fails here.
"""

from __future__ import annotations

from mcp_helpers import ISSUE_TOOL_NAMES, SPEC_TOOL_NAMES

from cpersona.server.tools import tool_names


def test_the_spec_names_thirty_tools() -> None:
    assert len(set(SPEC_TOOL_NAMES)) == len(SPEC_TOOL_NAMES) == 30


def test_the_registry_is_exactly_the_spec_list() -> None:
    # plus the tools added since, each with its docs/tools.md section; issue 22's four stay
    assert {"get_history", "declare_associations", "traverse", "reconstruct"} <= set(ISSUE_TOOL_NAMES)
    assert sorted(tool_names()) == sorted(SPEC_TOOL_NAMES + ISSUE_TOOL_NAMES)
    assert len(tool_names()) == len(set(tool_names()))  # no name twice
