"""Which texts go into which inference batch: as little padding as a call's own cost allows.

A batch is padded to its longest text, so a long memory embedded with its blocks and its lead sentence
(one ``embed_documents`` call: services/long_records.py) pads a 30-token sentence and 170-token blocks
to the 256 tokens of the memory's own text. Splitting the batch saves that work but each extra
``session.run`` costs a fixed overhead. The texts are sorted by length and cut into consecutive runs
of at most ``max_batch`` that minimise the estimated cost (an exact dynamic programme over the sorted
lengths). The cost model is in tokens: a batch costs ``rows × width × (1 + width / quadratic_at)``
(self-attention grows with the square of the width) plus ``overhead`` for the call itself; the
constants are measured by ``benchmarks/embed_batching.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: (token counts, the most texts a batch may hold) -> the batches, as lists of indexes.
BatchPlan = Callable[[Sequence[int], int], list[list[int]]]

#: A call's fixed cost, in tokens of work (MiniLM float32, 2 cores: ~3 ms against ~0.15 ms a token;
#: three fits by ``benchmarks/embed_batching.py``: 17, 22 and 27 tokens).
CALL_OVERHEAD_TOKENS = 24.0
#: The width at which attention's quadratic term equals the linear one (the same fits: 384, 384, 512).
QUADRATIC_AT = 384.0


def batch_cost(rows: int, width: int, overhead: float, quadratic_at: float) -> float:
    """The estimated cost, in tokens, of one call embedding ``rows`` texts padded to ``width``."""
    return rows * width * (1.0 + width / quadratic_at) + overhead


def plan_batches(
    lengths: Sequence[int],
    max_batch: int,
    overhead: float = CALL_OVERHEAD_TOKENS,
    quadratic_at: float = QUADRATIC_AT,
) -> list[list[int]]:
    """The indexes of ``lengths`` grouped into batches, each of at most ``max_batch``, shortest first.

    Every index appears exactly once; within a batch the texts are of neighbouring lengths."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    count, cap = len(order), max(1, int(max_batch))
    best = [0.0] + [float("inf")] * count  # best[j]: the cheapest plan for the j shortest texts
    cut = [0] * (count + 1)  # cut[j]: where the last batch of that plan starts
    for end in range(1, count + 1):
        width = lengths[order[end - 1]]  # the longest of any batch ending here
        for start in range(max(0, end - cap), end):
            cost = best[start] + batch_cost(end - start, width, overhead, quadratic_at)
            if cost < best[end]:
                best[end], cut[end] = cost, start
    batches: list[list[int]] = []
    end = count
    while end > 0:
        batches.append(order[cut[end] : end])
        end = cut[end]
    batches.reverse()
    return batches


def fixed_batches(lengths: Sequence[int], max_batch: int) -> list[list[int]]:
    """Sorted by length, then cut every ``max_batch`` texts: the rule before ``plan_batches`` (kept for
    ``benchmarks/embed_batching.py``'s comparison)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    cap = max(1, int(max_batch))
    return [order[start : start + cap] for start in range(0, len(order), cap)]
