"""Which graph embeds recall queries: the model's float32 one, or its int8 copy (``int8_matmul``).

A recall waits for its query's vector, so that one embedding sits on every recall's path; stored
texts are embedded in the background, in batches. The int8 copy is used for queries only when a
check at load shows, on this machine, that it agrees with the float32 graph and is faster:

- every probe text's two vectors have a cosine of at least ``MIN_COSINE`` (the int8 arithmetic
  quantises activations: its vectors are close to the float32 ones, not equal);
- over interleaved runs, the int8 copy's median time per text is at most ``MAX_TIME_RATIO`` of
  the float32 graph's (a CPU or runtime without a fast int8 kernel fails here and keeps float32).

Stored vectors always come from the float32 graph, so switching the kernel never changes the
database, and ``CPERSONA_EMBED_QUERY_KERNEL=exact`` gives every query the float32 graph too.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cpersona.result_types import QueryKernelStatus

#: The reason a choice gives before its check has run (benchmarks wait for another one).
NOT_CHECKED = "not checked yet"
#: The reason without the optional ``onnx`` package (the ``fast-query`` extra), which builds the copy.
NO_ONNX = (
    "the onnx package is not installed: `pip install 'cpersona-embedded[fast-query]'` adds the int8 "
    "query kernel (about 2x faster query embeddings on int8 models)"
)
#: The reason when the check was told to stop before it decided.
STOPPED = "the check stopped before it decided: the model was closed or the program ended"
MIN_COSINE = 0.995
MAX_TIME_RATIO = 0.95
#: Timed runs of each graph per probe text, alternating which goes first (docs/history/decisions-rounds.md, round 11).
ROUNDS = 5

#: Query-like texts of the lengths agents send (one word to a long sentence), in two languages. One
#: word agrees least (its mean pools few tokens): two are here so the check sees the worst case.
PROBE_TEXTS = (
    "ok",
    "kitten",
    "What did Caroline research?",
    "when is the dentist appointment",
    "Which database did we choose for the sync service, and why?",
    "Wie heißt die Katze meiner Schwester?",
    "the user's preferred code review style and the tools they dislike",
    "deploy failed again: permission denied on /var/lib/app after the upgrade to version 2.4",
)


@dataclass(frozen=True)
class KernelChoice:
    """The kernel recall queries use, and why."""

    kernel: str  # "int8" or "exact"
    reason: str
    min_cosine: float | None = None
    speedup: float | None = None

    @property
    def int8(self) -> bool:
        """Whether queries run on the int8 copy."""
        return self.kernel == "int8"

    def as_dict(self) -> QueryKernelStatus:
        """The ``stats.embedding.query_kernel`` object."""
        status: QueryKernelStatus = {"kernel": self.kernel, "reason": self.reason}
        if self.min_cosine is not None:
            status["min_cosine"] = round(self.min_cosine, 6)
        if self.speedup is not None:
            status["speedup"] = round(self.speedup, 2)
        return status


def exact(reason: str) -> KernelChoice:
    """The float32 graph, for ``reason``."""
    return KernelChoice("exact", reason)


def onnx_installed() -> bool:
    """Whether the ``onnx`` package that builds the int8 copy is importable (found, not imported: it
    takes a second to import, and only the check needs it)."""
    return importlib.util.find_spec("onnx") is not None


def expected(mode: str) -> str:
    """What the kernel check will do under ``CPERSONA_EMBED_QUERY_KERNEL=mode``, before it runs
    (``cpersona doctor`` loads the model but sends no query, so the check never starts there)."""
    if mode == "exact":
        return "float32 graph only (CPERSONA_EMBED_QUERY_KERNEL=exact)"
    if not onnx_installed():
        return f"float32 graph only: {NO_ONNX}"
    return "a model with int8 weights gets an int8 copy, checked after the first recall (`cpersona stats` shows the choice)"


def decide(min_cosine: float, time_ratio: float | None, forced: bool = False) -> KernelChoice:
    """The choice for a measured lowest cosine and int8/float32 median time ratio (None: not timed, as
    for a copy refused on agreement; ``forced``: not timed, agreement alone decides)."""
    speedup = None if time_ratio is None else 1.0 / time_ratio if time_ratio > 0 else float("inf")
    if min_cosine < MIN_COSINE:
        return KernelChoice(
            "exact",
            f"the int8 copy's vectors differ too much (cosine {min_cosine:.4f} < {MIN_COSINE})",
            min_cosine,
            speedup,
        )
    if forced:
        return KernelChoice(
            "int8", "CPERSONA_EMBED_QUERY_KERNEL=int8: the int8 copy agrees (speed not checked)", min_cosine
        )
    if time_ratio is None:  # agreement alone never makes the copy the default
        return KernelChoice("exact", "the int8 copy agrees but was not timed", min_cosine)
    if time_ratio > MAX_TIME_RATIO:
        return KernelChoice(
            "exact",
            f"the int8 copy is not faster here ({speedup:.2f}x; needs {1 / MAX_TIME_RATIO:.2f}x)",
            min_cosine,
            speedup,
        )
    return KernelChoice(
        "int8", "the int8 copy agrees with the float32 graph and is faster", min_cosine, speedup
    )


def check(
    float32: Callable[[str], np.ndarray],
    int8: Callable[[str], np.ndarray],
    texts: tuple[str, ...] = PROBE_TEXTS,
    rounds: int = ROUNDS,
    stop: Callable[[], bool] = lambda: False,
    timed: bool = True,
) -> KernelChoice:
    """Embed ``texts`` with both (unit vectors), interleaved, and ``decide``: first every text once with
    each (the agreement; a copy that disagrees is refused there, untimed), then the timed rounds.

    The time ratio compares each text's fastest run of ``rounds`` (summed over the texts): a start-up
    shares the machine with other work, and the fastest run is the one least disturbed by it. The two
    graphs take turns run by run, each going first every other round, so a burst of other work lands
    on both alike (run as a block per graph, two rounds each, one check in eight read the int8 copy as
    slower on a quiet machine where it is 1.3x faster).
    ``stop`` is asked before each text: when it says so, the check ends with the float32 graph.
    ``timed`` False (``CPERSONA_EMBED_QUERY_KERNEL=int8``): agreement alone decides, so the int8
    path is taken on any machine (tests of it cannot pass by falling back to float32).
    """
    cosines = []
    for text in texts:  # also warms both up
        if stop():
            return exact(STOPPED)
        cosines.append(float(np.dot(float32(text), int8(text))))
    if min(cosines) < MIN_COSINE:  # refused on agreement: timing it would change nothing
        return decide(min(cosines), None)
    if not timed:
        return decide(min(cosines), 0.0, forced=True)
    fastest: dict[str, list[float]] = {"float32": [], "int8": []}
    for text in texts:
        if stop():
            return exact(STOPPED)
        runs: dict[str, list[float]] = {"float32": [], "int8": []}
        for turn in range(rounds):
            order = (("float32", float32), ("int8", int8))
            for name, embed in order if turn % 2 == 0 else order[::-1]:
                runs[name].append(_timed(embed, text))
        for name, times in runs.items():
            fastest[name].append(min(times))
    return decide(min(cosines), sum(fastest["int8"]) / sum(fastest["float32"]))


def _timed(embed: Callable[[str], np.ndarray], text: str) -> float:
    started = time.perf_counter()
    embed(text)
    return time.perf_counter() - started
