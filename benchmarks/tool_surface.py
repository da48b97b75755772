"""What tools/list costs a host and a model: the sizes of the tool definitions, as this tree builds them.

    python benchmarks/tool_surface.py [--tools everyday] [--per-tool] [--json out.json]

Sizes are bytes of compact JSON (UTF-8), as a host would pass them on:

- **model-facing**: name + description + inputSchema per tool, what a host hands its model every
  session (about 4 bytes per token);
- **output schemas**: the ``outputSchema`` of each tool, ``full`` and ``envelope``
  (``CPERSONA_OUTPUT_SCHEMAS``), with their subschema counts (what a client that re-checks the
  schema per call pays for: docs/tools.md);
- **tools/list**: the whole ``Tool`` objects as the server lists them (title and annotations too).

``--tools`` takes ``CPERSONA_TOOLS``'s value (``everyday``, names). No timing: sizes only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, write_json  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.server.app import tool_list  # noqa: E402
from cpersona.server.output_schemas import output_schema  # noqa: E402
from cpersona.server.tools import offered_tools  # noqa: E402


def size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def subschemas(schema: Any) -> int:
    """How many schema objects ``schema`` holds (each one is validated against the metaschema)."""
    if isinstance(schema, list):
        return sum(subschemas(item) for item in schema)
    if not isinstance(schema, dict):
        return 0
    count = 1
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "$defs"):
            count += sum(subschemas(sub) for sub in value.values())
        elif key in ("items", "additionalProperties", "not", "if", "then", "else", "anyOf", "oneOf", "allOf"):
            count += subschemas(value)
    return count


def measure(tools: tuple[str, ...]) -> dict[str, Any]:
    settings = Settings(tools=tools)
    specs = offered_tools(settings)
    rows = []
    for spec in specs:
        full, envelope = output_schema(spec.name), output_schema(spec.name, "envelope")
        rows.append(
            {
                "tool": spec.name,
                "description": len(spec.description.encode()),
                "input_schema": size(spec.input_schema),
                "model_facing": size(
                    {"name": spec.name, "description": spec.description, "inputSchema": spec.input_schema}
                ),
                "output_full": size(full),
                "output_full_subschemas": subschemas(full),
                "output_envelope": size(envelope),
                "output_envelope_subschemas": subschemas(envelope),
            }
        )
    listed = [tool.model_dump(by_alias=True, exclude_none=True) for tool in tool_list(specs)]
    totals = {
        key: sum(row[key] for row in rows)
        for key in ("description", "input_schema", "model_facing", "output_full", "output_envelope")
    }
    totals["tools"] = len(rows)
    totals["tools_list_full"] = size(listed)
    return {"tools_setting": list(tools), "totals": totals, "per_tool": rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tools", default="", help="CPERSONA_TOOLS value (default: every tool)")
    parser.add_argument("--per-tool", action="store_true", help="one row per tool, largest first")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    tools = tuple(word.strip() for word in args.tools.split(",") if word.strip())
    result = measure(tools)
    totals = result["totals"]
    print(f"tools offered: {totals['tools']} (CPERSONA_TOOLS={args.tools or 'all'})")
    print_table(
        ["what", "bytes", "KB"],
        [
            [name, totals[key], round(totals[key] / 1024, 1)]
            for name, key in [
                ("descriptions", "description"),
                ("input schemas", "input_schema"),
                ("model-facing (name + description + inputSchema)", "model_facing"),
                ("output schemas, full", "output_full"),
                ("output schemas, envelope", "output_envelope"),
                ("tools/list (full output schemas)", "tools_list_full"),
            ]
        ],
    )
    if args.per_tool:
        print()
        print_table(
            [
                "tool",
                "model-facing",
                "description",
                "inputSchema",
                "output full",
                "subschemas",
                "envelope",
                "subschemas",
            ],
            [
                [
                    r["tool"],
                    r["model_facing"],
                    r["description"],
                    r["input_schema"],
                    r["output_full"],
                    r["output_full_subschemas"],
                    r["output_envelope"],
                    r["output_envelope_subschemas"],
                ]
                for r in sorted(result["per_tool"], key=lambda r: -r["model_facing"])
            ],
        )
    write_json(args.json, result)


if __name__ == "__main__":
    main()
