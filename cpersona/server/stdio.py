"""The stdio transport: newline-delimited JSON-RPC on this process's stdin/stdout.

Our own reader rather than the SDK's ``stdio_server``: that one drops any line its parser refuses
(every request gets a reply: docs/decisions.md#trust-boundary-issue-9). Each line goes through ``wire.screen``; valid messages
go to the MCP session, refusals are answered here with a JSON-RPC error.

While serving, fd 0 points at the null device and fd 1 at stderr, so a stray ``print`` in a
handler (or a child process) can never corrupt the wire; both are restored on exit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from io import TextIOWrapper

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from cpersona.server.wire import error_text, screen

log = logging.getLogger("cpersona.server")


def _claim_std_streams() -> tuple[int, int, Callable[[], None]]:
    """Private duplicates of fds 0 and 1 for the wire; divert the originals; return a restorer."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)

    def restore() -> None:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)

    return wire_in, wire_out, restore


def _emit(stream: TextIOWrapper, line: str) -> None:
    stream.write(line)
    stream.flush()


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """(read_stream, write_stream) for ``Server.run``, fed by a reader that answers unreadable lines."""
    wire_in, wire_out, restore = _claim_std_streams()
    # closefd=False: the reader thread may still block on the descriptor after we return.
    stdin = anyio.wrap_file(
        TextIOWrapper(os.fdopen(wire_in, "rb", closefd=False), encoding="utf-8", errors="replace")
    )
    stdout = TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_send.clone()  # the reader answers refusals on the same wire as the session

    async def reader() -> None:
        async with read_send, replies:
            async for line in stdin:
                if not line.strip():
                    continue
                screened = screen(line)
                if screened.message is not None:
                    await read_send.send(SessionMessage(screened.message))
                elif screened.notification:
                    log.warning("ignored an unreadable notification: %s", error_text(screened.reply))
                elif screened.reply is not None:
                    log.info("answered an unreadable request: %s", error_text(screened.reply))
                    await replies.send(SessionMessage(screened.reply))

    async def writer() -> None:
        async with write_recv:
            async for outgoing in write_recv:
                line = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                # One worker-thread hop per message (write and flush together), not one each: every
                # hop is a thread wake-up, and on a busy machine each one waits for a core.
                await anyio.to_thread.run_sync(_emit, stdout, line)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read_recv, write_send
    finally:
        restore()
