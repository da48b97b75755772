"""How a setting is declared: ``setting(...)`` on a ``Settings`` field names its environment variable,
bounds and one-line doc (a ``Var``); a ``Row`` is one field with its ``Var``, as the settings table
shows it; and the choice types and value parsers the fields share.
"""

from __future__ import annotations

import os
import tempfile
import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import platformdirs

APP_NAME = "cpersona"


#: The model CPERSONA_EMBEDDING_MODEL names when unset (docs/models.md#registry); licence CC BY-NC 4.0.
DEFAULT_EMBEDDING_MODEL = "jina-v5-nano"

#: Recent recall query texts whose vectors are kept when CPERSONA_EMBEDDING_CACHE_SIZE is unset (the
#: original CPersona's default); the backends' own default, so a backend built without Settings agrees.
DEFAULT_QUERY_CACHE_SIZE = 256

#: Seconds a query vector from an /embed server is kept when CPERSONA_EMBEDDING_CACHE_TTL is unset.
DEFAULT_QUERY_CACHE_TTL = 300.0


# The choices of the choice settings: the type checker sees them, and so do the checks and the README.
PgVectorIndex = Literal["hnsw", "exact"]


VectorFloat32 = Literal["memory", "file"]


RecallMode = Literal["rsf", "rrf", "cascade"]


EmbeddingMode = Literal["onnx", "http", "none"]


ModelSharing = Literal["auto", "off"]


QueryKernel = Literal["auto", "exact", "int8"]


Transport = Literal["stdio", "streamable-http"]


RecallPrecision = Literal["strict", "balanced", "lenient"]


OutputSchemaDetail = Literal["full", "envelope"]


SecretsPolicy = Literal["redact", "refuse", "allow"]


_TRUE = frozenset({"1", "true", "yes", "on"})


_FALSE = frozenset({"0", "false", "no", "off"})


_VAR = "cpersona.setting"  # the metadata key of a field's Var


T = TypeVar("T")


class ConfigError(ValueError):
    """A setting holds a value that cannot be used (from the environment or from code)."""


def default_data_dir() -> Path:
    """Per-user data directory (e.g. ``~/.local/share/cpersona`` on Linux)."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """Per-user directory for the model-sharing lock and socket: ``$XDG_RUNTIME_DIR/cpersona``.

    Without XDG_RUNTIME_DIR (macOS, containers), ``<temp dir>/cpersona-<uid>``; the
    sharing code creates it with mode 0700 and refuses one it does not own.
    """
    e = os.environ if env is None else env
    xdg = (e.get("XDG_RUNTIME_DIR") or "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / APP_NAME
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"{APP_NAME}-{uid}"


@dataclass(frozen=True)
class Var:
    """What the table says about one field besides its type and default."""

    name: str  # the environment variable (CPERSONA_...)
    doc: str  # one line: the README's "meaning" cell
    aliases: tuple[str, ...] = ()  # older names the CPERSONA_ one overrides
    minimum: float | None = None
    maximum: float | None = None
    parse: Callable[[str], Any] | None = None  # instead of the type's reader
    check: Callable[[Any], str | None] | None = None  # a value's problem, or None
    secret: bool = False  # never echo the value in an error (tokens, URLs with passwords)
    default_text: str | None = None  # the README's default when the value is computed or unset
    value_text: str | None = None  # the README's "value" cell when the type says too little


def setting(
    name: str,
    default: T,
    doc: str,
    *,
    aliases: tuple[str, ...] = (),
    minimum: float | None = None,
    maximum: float | None = None,
    parse: Callable[[str], Any] | None = None,
    check: Callable[[Any], str | None] | None = None,
    secret: bool = False,
    default_text: str | None = None,
    value_text: str | None = None,
) -> T:
    """One row of the settings table, declared as a ``Settings`` field with a plain default."""
    var = Var(name, doc, aliases, minimum, maximum, parse, check, secret, default_text, value_text)
    return field(default=default, metadata={_VAR: var})


def setting_computed(name: str, factory: Callable[[], T], doc: str, *, default_text: str) -> T:
    """A row whose default is computed at run time (a per-user path); the README shows ``default_text``."""
    return field(default_factory=factory, metadata={_VAR: Var(name, doc, default_text=default_text)})


def _postgres_url(value: str | None) -> str | None:
    if value is None or value.startswith(("postgresql://", "postgres://")):
        return None
    return "must be a postgresql:// URL (leave it unset for the SQLite file)"


def _boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("is not a boolean (use true/false)")


def _auto_or_boolean(raw: str) -> bool | None:
    """``auto`` (None: the code decides) or a boolean."""
    return None if raw.lower() == "auto" else _boolean(raw)


def _url_base(raw: str) -> str:
    return raw.rstrip("/")  # "<base>/<package>/json" is appended


@dataclass(frozen=True)
class Row:
    """One setting as the readers, the checks and the README generator see it."""

    attr: str  # the Settings field
    var: Var
    kind: type  # bool, int, float, str, Path or tuple (a comma-separated list of str)
    optional: bool  # None is a value (unset)
    choices: tuple[str, ...]  # a Literal's values; () for a free value
    spec: Field[Any]

    def read(self, raw: str) -> Any:
        """The value of the variable's (stripped, non-blank) text; ConfigError naming it when unusable."""
        shown = "" if self.var.secret else f"={raw!r}"
        try:
            value = self.var.parse(raw) if self.var.parse else self._parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{self.var.name}{shown} {exc}") from exc
        problem = self.problem(value)
        if problem is not None:
            raise ConfigError(f"{self.var.name}{shown}: {problem}")
        return value

    def _parse(self, raw: str) -> Any:
        if self.choices:
            return raw.lower()
        if self.kind is bool:
            return _boolean(raw)
        if self.kind is int:
            try:
                return int(raw)
            except ValueError:
                raise ValueError("is not an integer") from None
        if self.kind is float:
            try:
                return float(raw)
            except ValueError:
                raise ValueError("is not a number") from None
        if self.kind is Path:
            return Path(raw).expanduser()
        if self.kind is tuple:  # blank items dropped
            return tuple(item.strip() for item in raw.split(",") if item.strip())
        return raw

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not allowed here (choices, bounds, the row's own check), or None."""
        if value is None and self.optional:
            return None
        if self.choices and value not in self.choices:
            return f"expected one of {', '.join(self.choices)}"
        low, high = self.var.minimum, self.var.maximum
        if isinstance(value, int | float) and not isinstance(value, bool):
            # Written as "not (a <= b)" so that NaN fails too.
            if high is not None and low is not None and not (low <= value <= high):
                return f"must be between {low:g} and {high:g}"
            if low is not None and not (low <= value):
                return f"must be >= {low:g}"
        return self.var.check(value) if self.var.check else None

    @property
    def default(self) -> Any:
        """The static default, or None when it is computed at run time (see ``var.default_text``)."""
        return None if self.spec.default is MISSING else self.spec.default


def describe_hint(hint: Any) -> tuple[type, bool, tuple[str, ...]]:
    """A field's type hint as the settings table reads it: (type, optional, choices)."""
    args = get_args(hint)
    optional = get_origin(hint) in (Union, types.UnionType) and type(None) in args
    if optional:
        (hint,) = [a for a in args if a is not type(None)]
    if get_origin(hint) is Literal:
        return str, optional, tuple(get_args(hint))
    if get_origin(hint) is tuple:
        return tuple, optional, ()
    if hint in (bool, int, float, str, Path):
        return hint, optional, ()
    raise TypeError(f"settings table: no reader for the type {hint!r}")
