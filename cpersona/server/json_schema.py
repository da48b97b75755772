"""The one walker from Python annotations to JSON Schema: tool arguments, tool results, docs/api-shapes.md.

Two readings of the same annotations:

- **results** (``results_schema``): a TypedDict is written once under ``$defs`` and referred to,
  its docstring is its ``description``, ``None`` is JSON ``null``, objects stay open (the MCP layer
  adds keys such as ``content_truncated``); a key's meaning is its ``Annotated`` string.
- **arguments** (``arguments_schema``): a function's parameters become one closed object;
  ``Optional`` means "may be omitted" (``None`` is dropped: the dispatcher treats a null as omitted),
  a parameter without a default is required, a default other than None is quoted. Bounds and
  descriptions come from ``Annotated[..., pydantic.Field(ge=..., le=..., description=...)]``
  (``Field(json_schema_extra=...)`` for a keyword Field has no argument for, e.g. a runtime ``enum``).
  A TypedDict argument is written in place, closed unless its ``__pydantic_config__`` says
  ``extra="allow"``.

Portable constructs only (no type arrays, which strict validators refuse): a union is ``anyOf``.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SEQUENCES = (list, tuple, Sequence, Collection, Iterable)


# -- results ------------------------------------------------------------------------------------


def result_schema(tp: Any, defs: dict[str, Any], shapes: dict[str, type] | None = None) -> dict[str, Any]:
    """JSON Schema for one result annotation; TypedDicts go to ``defs`` once and are referenced
    (and, when ``shapes`` is given, recorded there by name)."""
    return _Walker(arguments=False, defs=defs, shapes=shapes).schema(tp)


# -- arguments ----------------------------------------------------------------------------------


def argument_schema(tp: Any) -> dict[str, Any]:
    """JSON Schema for one argument annotation (TypedDicts in place, ``None`` dropped)."""
    return _Walker(arguments=True, defs={}).schema(tp)


def parameters_schema(
    function: Callable[..., Any],
    *,
    skip: Collection[str] = (),
    wire: Mapping[str, tuple[Any, tuple[str, ...]]] | None = None,
    names: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The arguments of ``function`` as one closed JSON object.

    Left out: ``self``, ``skip``, and parameters annotated
    with a ``Field(exclude=True)`` (the Python API's own, e.g. recall's ``record``). ``wire``:
    arguments spelled differently on the wire, ``name -> (annotation, replaced parameters)``; each
    stands where the first parameter it replaces stood and is required when one of those is (at the
    end when it replaces none, required unless its Field has a default). ``names``: where annotation names not in the function's module are found.
    """
    hints = get_type_hints(function, localns=dict(names or {}), include_extras=True)
    walker = _Walker(arguments=True, defs={})
    wire = dict(wire or {})
    replaced = {param: name for name, (_, params) in wire.items() for param in params}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if (
            name in ("self", "cls")
            or name in skip
            or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ):
            continue
        if name in replaced:
            wire_name = replaced[name]
            if wire_name not in properties:
                properties[wire_name] = walker.schema(wire[wire_name][0])
            if parameter.default is inspect.Parameter.empty and wire_name not in required:
                required.append(wire_name)  # it stands for a required parameter
            continue
        hint = hints.get(name, Any)
        if _excluded(hint):
            continue
        prop = walker.schema(hint)
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        elif parameter.default is not None and "default" not in prop:
            prop["default"] = parameter.default
        properties[name] = prop
    for name, (annotation, params) in wire.items():
        if not params:
            properties[name] = walker.schema(annotation)
            if _required_annotation(annotation):
                required.append(name)
    return object_schema(properties, required)


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """A closed JSON object (``additionalProperties: false``) with these properties."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _excluded(annotation: Any) -> bool:
    return any(
        isinstance(meta, FieldInfo) and meta.exclude for meta in getattr(annotation, "__metadata__", ())
    )


def _required_annotation(annotation: Any) -> bool:
    """A wire argument is required unless its Field carries a default."""
    return not any(
        isinstance(meta, FieldInfo) and meta.default is not PydanticUndefined
        for meta in getattr(annotation, "__metadata__", ())
    )


# -- the walker ---------------------------------------------------------------------------------


class _Walker:
    def __init__(
        self, *, arguments: bool, defs: dict[str, Any], shapes: dict[str, type] | None = None
    ) -> None:
        self.arguments = arguments
        self.defs = defs
        self.shapes = {} if shapes is None else shapes

    def schema(self, tp: Any) -> dict[str, Any]:
        origin = get_origin(tp)
        if origin in (NotRequired, Required):
            return self.schema(get_args(tp)[0])
        if origin is typing.Annotated:
            return self._annotated(get_args(tp)[0], tp.__metadata__)
        if tp is Any or tp is object:
            return {}
        if tp is None or tp is type(None):
            return {"type": "null"}
        if isinstance(tp, type) and typing.is_typeddict(tp):
            return self._typeddict(tp)
        if origin is Literal:
            values = list(get_args(tp))
            if self.arguments:
                return {"type": _SCALARS[type(values[0])], "enum": values}
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if origin in (types.UnionType, typing.Union):
            members = [arg for arg in get_args(tp) if not (self.arguments and arg is type(None))]
            if len(members) == 1:
                return self.schema(members[0])
            return {"anyOf": [self.schema(arg) for arg in members]}
        if origin in _SEQUENCES or tp in (list, tuple):
            args = [arg for arg in get_args(tp) if arg is not Ellipsis]
            return {"type": "array", **({"items": self.schema(args[0])} if args else {})}
        if origin in (dict, Mapping) or tp is dict:
            pair = get_args(tp)
            value_schema: dict[str, Any] = self.schema(pair[1]) if pair else {}
            # additionalProperties: {} allows what its absence allows, but a validator still visits it per key.
            return {"type": "object", **({"additionalProperties": value_schema} if value_schema else {})}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        raise TypeError(f"no JSON Schema for the annotation {tp!r}")

    def _annotated(self, inner: Any, metadata: tuple[Any, ...]) -> dict[str, Any]:
        schema = dict(self.schema(inner))
        texts = [str(meta) for meta in metadata if isinstance(meta, str)]
        if texts:
            schema["description"] = " ".join(texts)
        for meta in metadata:
            if isinstance(meta, FieldInfo):
                schema = _with_field(schema, meta)
        return schema

    def _typeddict(self, shape: type) -> dict[str, Any]:
        if self.arguments:
            return self._object(shape)
        name = shape.__name__
        self.shapes[name] = shape
        if name not in self.defs:
            self.defs[name] = {}  # reserve the name first: a shape may refer to itself
            self.defs[name] = self._object(shape)
        return {"$ref": f"#/$defs/{name}"}

    def _object(self, shape: type) -> dict[str, Any]:
        hints = get_type_hints(shape, include_extras=True)
        schema: dict[str, Any] = {"type": "object"}
        if not self.arguments:
            schema["description"] = (shape.__doc__ or "").strip()
        schema["properties"] = {key: self.schema(tp) for key, tp in hints.items()}
        required = [key for key in hints if key in shape.__required_keys__]  # type: ignore[attr-defined]
        if required:
            schema["required"] = required
        config = getattr(shape, "__pydantic_config__", {}) or {}
        if self.arguments and config.get("extra") != "allow":
            schema["additionalProperties"] = False
        return schema


def _with_field(schema: dict[str, Any], field: FieldInfo) -> dict[str, Any]:
    """``schema`` with a ``pydantic.Field``'s bounds, description, extra keywords and default."""
    out = dict(schema)
    array = out.get("type") == "array"
    for meta in field.metadata:
        if isinstance(meta, Ge):
            out["minimum"] = meta.ge
        elif isinstance(meta, Le):
            out["maximum"] = meta.le
        elif isinstance(meta, Gt):
            out["exclusiveMinimum"] = meta.gt
        elif isinstance(meta, Lt):
            out["exclusiveMaximum"] = meta.lt
        elif isinstance(meta, MinLen):
            out["minItems" if array else "minLength"] = meta.min_length
        elif isinstance(meta, MaxLen):
            out["maxItems" if array else "maxLength"] = meta.max_length
        elif getattr(meta, "pattern", None) is not None:
            out["pattern"] = meta.pattern
    if isinstance(field.json_schema_extra, dict):
        out.update(field.json_schema_extra)
    if field.description:
        out["description"] = field.description
    if field.default is not PydanticUndefined and field.default is not None:
        out["default"] = field.default
    return out
