"""The question readers of session diversity (retrieval/diversity.py) read "A … B … C" part after part;
on any text they must say what the one-regex form of the same rule says, which backtracks (seconds on
a long query of repeated openers: benchmarks/reliability --parts query)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cpersona.retrieval.diversity import aggregates, measures_interval, orders

# The rules as single regexes: the reference, fine on short texts.
_AGGREGATE = re.compile(
    r"\b(how many|how often (?:did|have|has|had)|how much\b.*\b(?:in total|altogether|so far|overall)|"
    r"in total|in all|altogether|so far|total|average|combined)\b|"
    r"何回|何度|いくつ|合計|平均|合わせて|全部で|何[個冊本人件枚杯軒つ]",
    re.IGNORECASE,
)
_INTERVAL = re.compile(
    r"\bhow (?:long|much time|many (?:days|weeks|months|years))\b[^?]*\b(?:between|after|before|since)\b",
    re.IGNORECASE,
)
_ORDER = re.compile(
    r"\b(?:which|what|who)\b[^?]*\b(?:first|earlier|sooner|last|later|before|after)\b[^?]*\bor\b|"
    r"\b(?:before or after|after or before)\b|\b(?:what|which|in) order\b|\border of\b|\bchronological|"
    r"どちらが先|どっちが先|前か後|先か後|順番|順序",
    re.IGNORECASE,
)

PIECES = [
    "which", "What", "who", "first", "later", "before", "after", "or", "Or", "nor", "order", "how",
    "long", "much", "time", "many", "days", "between", "since", "in total", "overall", "so far",
    "the move", "I", "did", "?", "\n", ",", "whichever", "before-or-after", "how long", "how much",
    "先", "どちらが先", "何回",
]  # fmt: skip
TEXTS = st.lists(st.sampled_from(PIECES), max_size=14).map(" ".join) | st.text(max_size=60)


@settings(max_examples=600)
@given(TEXTS)
def test_each_reader_says_what_its_one_regex_says(text: str) -> None:
    assert aggregates(text) == bool(_AGGREGATE.search(text)), text
    assert measures_interval(text) == bool(_INTERVAL.search(text)), text
    assert orders(text) == bool(_ORDER.search(text) or _INTERVAL.search(text)), text


def test_a_long_query_of_repeated_openers_is_still_read() -> None:
    # 8,000 characters (the query cap) that the one-regex form took seconds over.
    assert orders(("which first " * 666) + "or B")
    assert not orders("which first " * 666)
    assert measures_interval(("how long " * 888) + "since the move")
    assert not measures_interval("how long " * 888)
    assert aggregates(("how much " * 888) + "overall")
