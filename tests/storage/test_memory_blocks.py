"""Block vectors of long memories in storage, on both engines (docs/retrieval.md#long-records).

Hand-made unit vectors, so which vector wins is known: a memory scores its best vector (its own or a
block's), takes one place in the list whatever its block count, and its blocks follow it (deleted with
it, dropped with its text, moved with its scope, cleared with a stale model's vectors).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from pg_cluster import ENGINES_AND_EXACT, raw_rows

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.storage.blocks import BLOCK_DISCOUNT, NewBlock
from cpersona.storage.interface import Session
from cpersona.storage.scope import Scope
from cpersona.storage.values import MEMORIES, NewMemory, VectorQuery
from cpersona.storage.vectors import to_blob

pytestmark = ENGINES_AND_EXACT

NOW = "2026-01-01T00:00:00Z"
MODEL, DIM = "m", 4


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def query(*values: float) -> VectorQuery:
    return VectorQuery(unit(*values), MODEL, DIM)


def insert(session: Session, content: str, vector: np.ndarray, agent: str = "a") -> int:
    return session.memories.insert(
        NewMemory(agent, "", "", "", content, None, None, NOW, NOW, to_blob(vector), MODEL, DIM)
    )


def block(index: int, vector: np.ndarray) -> NewBlock:
    return NewBlock(index, index * 100, index * 100 + 150, to_blob(vector))


@pytest.fixture
def mem(settings: Settings) -> Iterator[Memory]:
    with Memory(settings, start_background=False) as memory:
        yield memory


@pytest.fixture
def rows(mem: Memory) -> dict[str, int]:
    """Four memories along the axes; 'long' has blocks along the third and fourth axes."""
    with mem.storage.write() as s:
        ids = {
            "x": insert(s, "about x", unit(1, 0, 0, 0)),
            "long": insert(s, "a long memory", unit(0.2, 1, 0, 0)),
            "z": insert(s, "about z", unit(0, 0.5, 1, 0)),
            "other": insert(s, "another agent's", unit(0, 0, 0, 1), agent="b"),
        }
        s.memories.set_blocks(
            ids["long"],
            [block(1, unit(0, 0, 1, 0)), block(2, unit(0, 0, 0.9, 0.1)), block(3, unit(0, 0, 0, 1))],
            MODEL,
            DIM,
        )
    return ids


def nearest(
    mem: Memory,
    q: VectorQuery,
    limit: int,
    *,
    agent: str = "a",
    allowed_ids: list[int] | None = None,
    window: int | None = None,
) -> list[tuple[int, float]]:
    with mem.storage.read() as s:
        return s.vector_search.nearest(
            MEMORIES, q, Scope(agent_id=agent), limit, window=window, allowed_ids=allowed_ids
        )


def test_a_memory_scores_its_best_block_and_takes_one_place(mem: Memory, rows: dict[str, int]) -> None:
    found = nearest(mem, query(0, 0, 1, 0), 10)
    ids = [i for i, _ in found]
    # block 1 (cosine 1, less the discount every block's cosine takes), not its own vector
    assert ids[0] == rows["long"] and found[0][1] == pytest.approx(1.0 - BLOCK_DISCOUNT, abs=1e-5)
    assert ids.count(rows["long"]) == 1  # three blocks near the query, one place
    assert rows["other"] not in ids  # another agent's row stays out, and so do its blocks' owner's
    assert sorted(ids) == sorted([rows["x"], rows["long"], rows["z"]])
    # The row count is the unit of the limit: two places, two memories, though blocks fill the top.
    assert [i for i, _ in nearest(mem, query(0, 0, 1, 0.05), 2)] == [rows["long"], rows["z"]]


def test_a_block_counts_less_than_a_memorys_own_vector(mem: Memory, rows: dict[str, int]) -> None:
    """The best of a long memory's blocks is high by chance alone: at an equal cosine a short memory's
    own vector ranks first, and a block wins only by more than ``BLOCK_DISCOUNT``."""
    with mem.storage.write() as s:
        short = insert(s, "a short memory on the third axis", unit(0, 0, 1, 0))
    found = nearest(mem, query(0, 0, 1, 0), 2)
    assert found[0] == (short, pytest.approx(1.0, abs=1e-5))
    assert found[1] == (rows["long"], pytest.approx(1.0 - BLOCK_DISCOUNT, abs=1e-5))


def test_allowed_ids_restrict_blocks_by_their_memory(mem: Memory, rows: dict[str, int]) -> None:
    found = nearest(mem, query(0, 0, 1, 0), 10, allowed_ids=[rows["x"], rows["z"]])
    assert [i for i, _ in found] == [rows["z"], rows["x"]]


def test_the_scan_window_counts_memories_and_takes_their_blocks_along(
    mem: Memory, rows: dict[str, int]
) -> None:
    # CPERSONA_MAX_MEMORIES: the newest N memories in scope compete, each with its blocks.
    q = query(0, 0, 0, 1)
    assert nearest(mem, q, 10, window=2)[0] == (rows["long"], pytest.approx(1.0 - BLOCK_DISCOUNT, abs=1e-5))
    assert [i for i, _ in nearest(mem, q, 10, window=1)] == [rows["z"]]  # 'long' is out, so are its blocks


def test_cosines_and_best_blocks_name_the_winning_block(mem: Memory, rows: dict[str, int]) -> None:
    q = query(0, 0, 0, 1)
    with mem.storage.read() as s:
        cos = s.vector_search.cosines(MEMORIES, q, [rows["long"], rows["x"]])
        best = s.vector_search.best_blocks(q, [rows["long"], rows["x"]])
    assert cos[rows["long"]] == pytest.approx(1.0 - BLOCK_DISCOUNT, abs=1e-5)
    assert cos[rows["x"]] == pytest.approx(0.0, abs=1e-5)
    assert set(best) == {rows["long"]}
    assert best[rows["long"]].describe() == {"index": 3, "start": 300, "end": 450}
    with mem.storage.read() as s:  # its own vector wins: no block named
        assert s.vector_search.best_blocks(query(0.2, 1, 0, 0), [rows["long"]]) == {}


def test_blocks_follow_their_memory(mem: Memory, rows: dict[str, int]) -> None:
    long_id = rows["long"]
    with mem.storage.write() as s:
        s.memories.set_blocks(long_id, [block(1, unit(0, 0, 1, 0))], MODEL, DIM)  # replaces all three
    with mem.storage.read() as s:
        assert [b.index for b in s.memories.blocks_of([long_id], MODEL, DIM)] == [1]
        assert s.memories.blocks_of([long_id], "other-model", DIM) == []
    nearest(mem, query(0, 0, 1, 0), 10)  # the SQLite index holds the block now: later changes patch it
    with mem.storage.write() as s:
        s.memories.update_content(long_id, "new text")  # stale blocks go with the stale vector
    with mem.storage.read() as s:
        assert s.memories.blocks_of([long_id], MODEL, DIM) == []
    assert [i for i, _ in nearest(mem, query(0, 0, 1, 0), 10)] == [rows["z"], rows["x"]]
    with mem.storage.write() as s:
        s.memories.set_embedding(long_id, to_blob(unit(0.2, 1, 0, 0)), MODEL, DIM)
        s.memories.set_blocks(long_id, [block(1, unit(0, 0, 1, 0))], MODEL, DIM)
    assert nearest(mem, query(0, 0, 1, 0), 1)[0][0] == long_id
    mem.delete_memory(f"mem:{long_id}", agent_id="a")
    with mem.storage.read() as s:
        assert s.memories.blocks_of([long_id], MODEL, DIM) == []
    assert long_id not in [i for i, _ in nearest(mem, query(0, 0, 1, 0), 10)]


def test_blocks_move_with_their_memory(mem: Memory, rows: dict[str, int]) -> None:
    with mem.storage.write() as s:
        s.memories.set_blocks(rows["x"], [block(1, unit(0, 0, 0, 1))], MODEL, DIM)
    assert nearest(mem, query(0, 0, 0, 1), 1)[0][0] in (rows["x"], rows["long"])
    # The row moves to agent b (as a merge between agents does): its block leaves agent a's scope with it.
    raw_rows(mem, "UPDATE memories SET agent_id = 'b' WHERE id = ?", (rows["x"],))
    assert rows["x"] not in [i for i, _ in nearest(mem, query(0, 0, 0, 1), 10)]
    assert rows["x"] in [i for i, _ in nearest(mem, query(0, 0, 0, 1), 10, agent="b")]


def test_a_stale_dimension_takes_the_blocks_too(mem: Memory, rows: dict[str, int]) -> None:
    with mem.storage.write() as s:
        s.vectors.invalidate(MODEL, DIM + 1)  # the active model now has another dimension
    with mem.storage.read() as s:
        assert s.memories.blocks_of([rows["long"]], MODEL, DIM) == []


@pytest.mark.parametrize("mode", ["copy", "move"])
def test_a_merge_takes_the_blocks_along(mem: Memory, rows: dict[str, int], mode: str) -> None:
    result = mem.merge_memories("a", "c", mode=mode)
    assert result["ok"] is True
    found = nearest(mem, query(0, 0, 0, 1), 1, agent="c")  # the long memory's block 3, now agent c's
    assert found and found[0][1] == pytest.approx(1.0 - BLOCK_DISCOUNT, abs=1e-5)
    with mem.storage.read() as s:
        assert [b.index for b in s.memories.blocks_of([found[0][0]], MODEL, DIM)] == [1, 2, 3]
    assert (rows["long"] in [i for i, _ in nearest(mem, query(0, 0, 0, 1), 10)]) is (mode == "copy")
