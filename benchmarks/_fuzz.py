"""Hypothesis strategies for the reliability fuzzer: arguments for every tool, read from its schema.

Mostly plausible values of the right JSON type (so calls get past validation and
reach the API), with nasty text (FTS syntax, NUL, lone surrogates, BOM, wide
characters), huge and negative numbers, deep nesting and wrong types mixed in.
Generation runs under ``@given`` outside pytest, so shrinking and the example
database are off: we only want many varied inputs, reproducibly by seed.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

NASTY = [
    '"',
    "*",
    ":",
    "(",
    ")",
    "NEAR",
    "AND",
    "OR",
    "NOT",
    "^",
    "-",
    "{",
    "}",
    "'",
    "\\",
    "\x00",
    "\ufeff",
    "ｚｅｂｒａ",
    "記憶",
    " ",
    "\n",
    "mem:1",
    "ep:1",
    "%",
    "_",
    "../",
    "/etc/passwd",
    "🦉",
]

_plain = st.one_of(st.text(max_size=30), st.lists(st.sampled_from(NASTY), max_size=8).map(" ".join))
# Lone surrogates (valid JSON escapes, invalid UTF-16) in about one string in twenty: enough to exercise
# every parser on the way, few enough that most calls still reach the tools.
_surrogates = st.lists(
    st.one_of(st.sampled_from(NASTY), st.characters(categories=["Cs"])), min_size=1, max_size=8
).map("".join)


def weighted(
    common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], one_in: int
) -> st.SearchStrategy[Any]:
    """``rare`` about once in ``one_in`` draws, else ``common`` (one_of would weigh each branch equally)."""
    return st.integers(min_value=1, max_value=one_in).flatmap(lambda n: rare if n == 1 else common)


nasty_text = weighted(_plain, _surrogates, 20)
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    nasty_text,
)
json_value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(nasty_text, inner, max_size=3),
    max_leaves=8,
)


def deep(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"d": value}
    return value


# Deep enough to pass the SDK's ~200-level limits, shallow enough for json.dumps (recursion limit 1000).
nesting = st.integers(min_value=50, max_value=800).map(deep)
# Nesting written as text (a JSON string inside a string argument) can go far deeper than real nesting.
deep_text = st.integers(min_value=100, max_value=8000).flatmap(
    lambda n: st.sampled_from(["[" * n + "]" * n, '{"a":' * n + "1" + "}" * n])
)
row_ids = st.one_of(
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=40).map(lambda i: f"mem:{i}"),
    st.integers(min_value=1, max_value=10).map(lambda i: f"ep:{i}"),
    st.sampled_from(["mem:99999999999999999999999", "ep:0", "mem:-1", "0", ""]),
    st.integers(min_value=-(2**70), max_value=2**70),
    nasty_text,
)
agents = st.one_of(st.sampled_from(["fz-a", "fz-b", ""]), nasty_text)
by_name: dict[str, st.SearchStrategy[Any]] = {
    "agent_id": agents,
    "target_agent_id": agents,
    "source_agent_id": agents,
    "memory_id": row_ids,
    "episode_id": row_ids,
    "refs": weighted(
        st.lists(
            st.one_of(
                st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=10**30)
            ).flatmap(lambda n: st.sampled_from([f"mem:{n}", f"ep:{n}"])),
            min_size=1,
            max_size=20,
        ),
        st.lists(st.one_of(row_ids.map(str), nasty_text), min_size=0, max_size=22),
        5,
    ),
    "ttl_seconds": st.one_of(st.integers(min_value=-5, max_value=3), st.floats(allow_nan=False)),
    "apply": st.booleans(),
    "output_path": st.one_of(
        st.sampled_from(["fz.jsonl", "sub/fz.jsonl", "../escape.jsonl", "/tmp/x.jsonl"]), nasty_text
    ),
    "input_path": st.one_of(st.sampled_from(["fz.jsonl", "missing.jsonl", "../escape.jsonl"]), nasty_text),
    "message": st.fixed_dictionaries(
        {"content": nasty_text},
        optional={
            "id": st.one_of(nasty_text, st.integers()),
            "timestamp": st.one_of(nasty_text, st.integers()),
            "metadata": weighted(json_value, st.one_of(nesting, nesting.map(json.dumps), deep_text), 8),
            "source": json_value,
        },
    ),
}


def for_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the schema's JSON type (bounds ignored: out-of-range values are part of the point)."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    options: list[st.SearchStrategy[Any]] = []
    for k in kinds:
        if k == "string":
            enum = schema.get("enum")
            options.append(st.sampled_from(enum) if enum else nasty_text)
        elif k == "integer":
            options.append(
                st.one_of(
                    st.integers(min_value=-3, max_value=120), st.integers(min_value=-(2**70), max_value=2**70)
                )
            )
        elif k == "number":
            options.append(st.floats(allow_nan=False))
        elif k == "boolean":
            options.append(st.booleans())
        elif k == "array":
            options.append(st.lists(for_schema(schema.get("items") or {}), max_size=4))
        elif k == "object":
            props = schema.get("properties")
            options.append(
                arguments(schema) if props else st.dictionaries(nasty_text, json_value, max_size=3)
            )
    return st.one_of(*options) if options else json_value


def arguments(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Arguments for an object schema: plausible most of the time, sometimes wrong-typed or extra keys."""
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))

    def value(name: str, sub: dict[str, Any]) -> st.SearchStrategy[Any]:
        plausible = by_name[name] if name in by_name else for_schema(sub)
        # Deep nesting in about one value in thirty, wrong types in one in six.
        return weighted(weighted(plausible, json_value, 6), nesting, 30)

    plausible = st.fixed_dictionaries(
        {n: value(n, s) for n, s in props.items() if n in required},
        optional={n: value(n, s) for n, s in props.items() if n not in required},
    )
    extra = st.dictionaries(nasty_text, json_value, min_size=1, max_size=2)
    return st.one_of(
        plausible,
        plausible,
        plausible,
        plausible,
        st.builds(lambda a, b: {**b, **a}, plausible, extra),
        json_value,
    )


def generate(schema: dict[str, Any], count: int, rng_seed: int) -> list[Any]:
    """``count`` generated argument values for ``schema`` (reproducible by ``rng_seed``)."""
    out: list[Any] = []

    @seed(rng_seed)
    @settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(arguments(schema))
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    # Hypothesis may stop early once it has exhausted a small space; top up by resampling.
    rng = random.Random(rng_seed)
    while out and len(out) < count:
        out.append(rng.choice(out))
    return out[:count]


def max_depth(value: Any, depth: int = 0) -> int:
    """Nesting depth of a JSON value (iterative: the values can be deeper than the recursion limit)."""
    deepest, stack = depth, [(value, depth)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def has_lone_surrogate(value: Any) -> bool:
    """True when any string (key or value) holds a surrogate code point."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any(0xD800 <= ord(ch) <= 0xDFFF for ch in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def suspect(arguments: Any) -> str:
    """A one-word guess at what made a request go unanswered (for the report)."""
    if has_lone_surrogate(arguments):
        return "lone_surrogate"
    if max_depth(arguments) > 150:
        return "deep_nesting"
    return "other"
