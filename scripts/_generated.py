"""What every ``scripts/gen_*.py`` shares: swap the block between two markers, and write or ``--check``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def replace_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with everything from ``begin`` to ``end`` (markers included) replaced by ``block``."""
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + block + tail


def regenerate(path: Path, render: Callable[[str], str], argv: list[str], stale: str) -> int:
    """Rewrite ``path`` with ``render`` (given its current text; "" before it exists); with ``--check``
    print ``stale`` and return 1 when it is out of date."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    fresh = render(text)
    if "--check" in argv:
        if fresh != text:
            print(stale, file=sys.stderr)
            return 1
        return 0
    path.write_text(fresh, encoding="utf-8")
    return 0
