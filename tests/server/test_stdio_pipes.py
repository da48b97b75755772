"""The stdio wire served by the event loop itself (both ends pipes: cpersona/server/stdio.py): a burst
of requests written at once, whose replies overrun the pipe's buffer several times, is answered in
full, each reply whole; the server then exits cleanly when the client hangs up.

(A request still running when the client closes stdin gets no reply: the SDK ends the session and
its handlers at EOF, with the threaded reader as with this one.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from raw_wire import RawStdio, tool_call

pytestmark = pytest.mark.slow

PIPE_BUFFER = 65536  # Linux's default pipe capacity: the replies below are several times larger


def test_a_burst_past_the_pipe_buffer_is_answered_in_full(tmp_path: Path) -> None:
    raw = RawStdio(tmp_path)
    try:
        raw.handshake()
        text = "a long memory line " * 700  # ~13k characters, under the content cap
        for i in range(8):
            raw.send(
                tool_call(100 + i, "store", {"agent_id": "pipes", "message": {"content": f"{i} {text}"}})
            )
        raw.wait_for([100 + i for i in range(8)])
        refs = [json.loads(raw.replies[100 + i]["result"]["content"][0]["text"])["ref"] for i in range(8)]
        burst = [tool_call(200 + i, "get_contents", {"agent_id": "pipes", "refs": refs}) for i in range(12)]
        assert raw.proc.stdin is not None
        raw.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in burst))  # one write
        raw.proc.stdin.flush()
        raw.wait_for([200 + i for i in range(12)], timeout=60)
        sizes = [len(json.dumps(raw.replies[200 + i])) for i in range(12)]
        assert sum(sizes) > 4 * PIPE_BUFFER
        for i in range(12):
            items = json.loads(raw.replies[200 + i]["result"]["content"][0]["text"])["items"]
            assert [item["ref"] for item in items] + list(
                json.loads(raw.replies[200 + i]["result"]["content"][0]["text"]).get("deferred", [])
            ) == refs
        assert raw.garbage == []
        raw.proc.stdin.close()
        assert raw.proc.wait(timeout=30) == 0
    finally:
        stderr = raw.close()
    assert "Traceback" not in stderr
