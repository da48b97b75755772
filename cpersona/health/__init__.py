"""The degradation surface: what works, what does not, and what to do about it."""

# Checks contributed by other features register themselves on import (after the built-in ones).
from cpersona.health import block_checks as _block_checks  # noqa: F401
from cpersona.health import calibration_check as _calibration_check  # noqa: F401
from cpersona.health import secrets_check as _secrets_check  # noqa: F401
