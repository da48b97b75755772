"""The research scripts' own arithmetic (benchmarks/research/): how a server's rows map back to turns,
how the long-history figures are carried to LongMemEval through the original's anchor, how the gate
witness study reads a trace and places its cut, and when the original's LoCoMo run takes it as settled. Checked on rows whose right values are known; the
scripts' runs against real servers and models are measurements, not tests."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS / "research"))

import longchat_anchor  # noqa: E402
import original_locomo  # noqa: E402
import original_longchat  # noqa: E402


def test_a_row_maps_back_by_message_id_then_row_id_then_content() -> None:
    session_of = {"h-s01-t00": "s01", "h-s02-t03": "s02"}
    turn_of = {"user: hello": "h-s01-t00", "row:17": "h-s02-t03"}
    # The original answers the message id it was stored with; its content is cut to 500 characters.
    assert (
        original_longchat._turn_of_row({"id": "h-s01-t00", "content": "cut…"}, session_of, turn_of)
        == "h-s01-t00"
    )
    # Ours answers the row id ``store`` returned, and a preview of a long row's content.
    assert (
        original_longchat._turn_of_row({"id": 17, "content": "preview…"}, session_of, turn_of) == "h-s02-t03"
    )
    assert (
        original_longchat._turn_of_row({"id": 99, "content": "user: hello"}, session_of, turn_of)
        == "h-s01-t00"
    )
    assert original_longchat._turn_of_row({"id": 99, "content": "other"}, session_of, turn_of) == ""
    # An episode of ours shares no numbering with memories: it never maps to a turn.
    episode = {"id": 17, "type": "episode", "content": "user: hello"}
    assert original_longchat._turn_of_row(episode, session_of, turn_of) == ""
    # A row id no store answered, and no content: nothing maps.
    assert original_longchat._turn_of_row({"id": 18}, session_of, turn_of) == ""


def test_rates_split_where_the_original_finds_and_where_it_misses() -> None:
    original = {"a": {"all@10": 1.0}, "b": {"all@10": 1.0}, "c": {"all@10": 0.0}, "d": {"all@10": 0.0}}
    server = {"a": {"all@10": 1.0}, "b": {"all@10": 0.0}, "c": {"all@10": 1.0}, "d": {"all@10": 1.0}}
    found, missed, n_found, n_missed = longchat_anchor.split_rates(server, original, list(original), "all@10")
    assert (found, missed, n_found, n_missed) == (0.5, 1.0, 2, 2)
    # Carried to where the original finds 90%: half of that, and all of the other 10%.
    assert longchat_anchor.carried(found, missed, 0.9) == pytest.approx(0.5 * 0.9 + 1.0 * 0.1)
    # Where the original finds everything, only the found questions' rate counts.
    assert longchat_anchor.carried(found, missed, 1.0) == 0.5
    # The original carried to its own anchor reads the anchor.
    own = longchat_anchor.split_rates(original, original, list(original), "all@10")
    assert longchat_anchor.carried(own[0], own[1], 0.903) == pytest.approx(0.903)


def test_rows_are_read_from_each_harness_shape(tmp_path: Path) -> None:
    row = {"question_id": "m000-preference", "session@5": 1.0, "all@10": 0.0}
    other = {**row, "session@5": 0.0}
    shapes = {
        "original.json": {"rows": [row]},  # original_longchat.py
        "mcp.json": {"rows": {"as stored": [other], "settled": [row]}},  # longchat_mcp.py
        "inprocess.json": {
            "rows": {"default": {"uncalibrated": [row], "calibrated": [other]}}
        },  # longchat.py
    }
    for name, payload in shapes.items():
        (tmp_path / name).write_text(json.dumps(payload))
    assert longchat_anchor.question_rows(str(tmp_path / "original.json"))["m000-preference"] == row
    assert longchat_anchor.question_rows(str(tmp_path / "mcp.json"))["m000-preference"] == row
    assert longchat_anchor.question_rows(str(tmp_path / "mcp.json@as stored"))["m000-preference"] == other
    inprocess = str(tmp_path / "inprocess.json")
    assert longchat_anchor.question_rows(inprocess)["m000-preference"] == row
    assert longchat_anchor.question_rows(inprocess + "@default/calibrated")["m000-preference"] == other


def test_a_graded_figure_is_carried_by_the_anchors_misses() -> None:
    # Half the anchor's misses here: half its misses there.
    assert longchat_anchor.scaled_misses(0.8, 0.6, 0.9) == pytest.approx(0.95)
    # An anchor carried by itself reads its own figure.
    assert longchat_anchor.scaled_misses(0.6, 0.6, 0.801) == pytest.approx(0.801)
    # An anchor that misses nothing here carries nothing.
    assert longchat_anchor.scaled_misses(0.7, 1.0, 0.9) != longchat_anchor.scaled_misses(0.7, 1.0, 0.9)


def test_sets_pool_by_data_and_question_and_keep_only_what_every_server_answered(tmp_path: Path) -> None:
    def write(path: Path, payload: dict) -> str:
        path.write_text(json.dumps(payload))
        return str(path)

    sets = []
    for name, hit in (("a", 1.0), ("b", 0.0)):
        data = tmp_path / name
        data.mkdir()
        questions = [{"question_id": "m000-preference"}, {"question_id": "m000-multi-session"}]
        write(data / "longchat.json", {"histories": [{"history_id": "m000", "questions": questions}]})
        both = {"rows": [{"question_id": q["question_id"], "all@10": hit} for q in questions]}
        one = {"rows": [{"question_id": "m000-preference", "all@10": 1.0 - hit}]}
        sets.append(
            [
                str(data),
                write(tmp_path / f"{name}-o.json", both),
                write(tmp_path / f"{name}-s.json", both),
                write(tmp_path / f"{name}-u.json", one),
            ]
        )
    servers, ids = longchat_anchor.pooled(sets)
    # The same question id in two sets is two questions; one ours did not answer is left out of both.
    assert ids == [f"{tmp_path / 'a'}#m000-preference", f"{tmp_path / 'b'}#m000-preference"]
    assert [servers["ours"][q]["all@10"] for q in ids] == [0.0, 1.0]
    assert [servers["original"][q]["all@10"] for q in ids] == [1.0, 0.0]


def test_a_witness_is_read_from_the_traced_lists_and_the_cut_keeps_as_many_real_questions() -> None:
    import gate_witness

    lists = {"vector": ["m1", "m2", "m3"], "fts_words": ["m2", "m9"], "fts_memories": ["m7", "m3"]}
    found = gate_witness.features({"evidence": 0.7, "threshold": 0.6}, lists, [0.9, 0.5, 0.4, 0.3])
    assert found["margin"] == pytest.approx(0.1)
    assert found["agree5"] == found["agree10"] == 2.0  # m2 and m3 are in a keyword list's best rows
    assert found["top1_in_keyword"] == 0.0  # m1 is in no keyword list
    assert found["vector_gap"] == pytest.approx(0.9 - 0.4)
    assert gate_witness.auc([2, 3], [1, 2]) == 0.875  # three pairs above, one tie counted half
    assert gate_witness.auc([1.0], [0.0]) == 1.0 and gate_witness.auc([0.0], [1.0]) == 0.0
    real = [0.3, -0.2, 0.1, -0.05]
    # The calibrated threshold (0) empties two: the cut lies between the second and third lowest.
    cut = gate_witness.equal_real_cut(real, 2)
    assert sum(r < cut for r in real) == 2 and -0.05 < cut < 0.1
    assert sum(r < gate_witness.equal_real_cut(real, 0) for r in real) == 0
    assert gate_witness.empty_share([0.0, 0.02, 0.2], cut) == pytest.approx(2 / 3)  # the cut is 0.025


def test_the_originals_rows_are_read_best_first_from_either_answer_shape() -> None:
    rows = [{"id": "D1:1"}, {"id": "D1:2"}, "not a row", {"id": "D2:5"}]
    # The original lists its best match last.
    assert [r["id"] for r in original_locomo.rows_of({"results": rows})] == ["D2:5", "D1:2", "D1:1"]
    assert [r["id"] for r in original_locomo.rows_of({"memories": rows[:2]})] == ["D1:2", "D1:1"]
    assert original_locomo.rows_of({"ok": True}) == []


def test_the_original_is_settled_once_its_calibration_file_stops_changing(tmp_path: Path) -> None:
    db = tmp_path / "locomo.db"
    sidecar = tmp_path / "locomo.db.calibration.json"
    # No calibration written: not settled within the wait.
    assert original_locomo.until_calibrated(db, time.time(), wait_s=0.4, quiet_s=0.2) is None
    # A file older than this server's start is the previous server's: still not settled.
    sidecar.write_text("{}")
    os.utime(sidecar, (time.time() - 60, time.time() - 60))
    assert original_locomo.until_calibrated(db, time.time(), wait_s=0.4, quiet_s=0.2) is None
    # Written after the start and then left alone: settled once quiet.
    since = time.time() - 1
    sidecar.write_text('{"agent_thresholds": {"locomo": 0.65}}')
    assert original_locomo.until_calibrated(db, since, wait_s=5.0, quiet_s=0.4) is not None
    # Still being rewritten more often than the quiet time: not settled.
    stop = threading.Event()

    def rewrite() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            sidecar.write_text(json.dumps({"agent_thresholds": {"locomo": n}}))
            time.sleep(0.05)

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        assert original_locomo.until_calibrated(db, since, wait_s=1.2, quiet_s=0.4) is None
    finally:
        stop.set()
        writer.join()
