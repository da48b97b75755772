"""Tests that need something of the machine (root, chattr, a tmpfs mount) skip where it is missing,
unless CI asks for them: with the switch set, the same lack fails the test instead of hiding it."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

#: Set by .ci/run (the CI machine runs tests as root on Debian, where chattr and tmpfs mounts work).
FS_FAULTS = "REQUIRE_FS_FAULTS"


def unavailable(reason: str, switch: str = FS_FAULTS) -> NoReturn:
    """Skip with ``reason``; fail instead when ``switch`` is set in the environment."""
    if os.environ.get(switch):
        pytest.fail(f"{reason} ({switch} is set: this machine must run the test)")
    pytest.skip(reason)
