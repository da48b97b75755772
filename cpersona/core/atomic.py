"""Writing a file so that readers see the old file or the whole new one, never half of it.

One helper for every file CPersona writes beside its data (the update-check cache, a
model's install record, an export, the calibration sidecar): a temp file in the same
directory (so the final rename stays on one filesystem), flushed and fsynced, then
``os.replace``. Any exception, KeyboardInterrupt included, removes the temp file and
leaves the target as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO


@contextmanager
def atomic_text(target: Path, *, mode: int | None = None) -> Iterator[TextIO]:
    """Yield a UTF-8 text handle; on a clean exit the text becomes ``target`` in one rename.

    ``mode`` sets the permission bits (``mkstemp`` creates 0600); leave it None for a
    private file. To abandon the write, raise inside the block.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_json(target: Path, data: Any, *, mode: int | None = None) -> None:
    """``data`` as indented, key-sorted JSON with a final newline, written atomically."""
    with atomic_text(target, mode=mode) as handle:
        json.dump(data, handle, indent=2, sort_keys=True, ensure_ascii=False)
        handle.write("\n")
