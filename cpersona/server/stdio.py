"""The stdio transport: newline-delimited JSON-RPC on this process's stdin/stdout.

Our own reader rather than the SDK's ``stdio_server``: that one drops any line its parser refuses
(every request gets a reply: docs/decisions.md#trust-boundary-issue-9). Each line goes through ``wire.screen``; valid messages
go to the MCP session, refusals are answered here with a JSON-RPC error.

While serving, fd 0 points at the null device and fd 1 at stderr, so a stray ``print`` in a
handler (or a child process) can never corrupt the wire; both are restored on exit.

When both ends of the wire are pipes or sockets (an MCP client's usual spawn), the event loop reads
and writes them itself (non-blocking, asyncio's pipe transports): no worker-thread hand-off per
line read or message written, each of which is a thread wake-up on the way of every call. Anything
else (a terminal, a file, Windows) is written on worker threads, blocking; a file is read on them
too, and a terminal (or Windows' console) by a daemon thread of its own, whose blocked read never
holds up a Ctrl-C (docs/decisions.md, issue 35).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from io import TextIOWrapper

import anyio
import anyio.from_thread
import anyio.lowlevel
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


#: The longest line the loop's reader takes in one piece (a message is one line; MCP sets no cap).
LINE_LIMIT = 1 << 30


def _emit(stream: TextIOWrapper, line: str) -> None:
    stream.write(line)
    stream.flush()


def _pipe_or_socket(fd: int) -> bool:
    """Whether the loop may serve ``fd`` without threads: a pipe or socket on a Unix-like system. A
    terminal is not (making it non-blocking would reach the shell sharing it), nor a plain file."""
    if sys.platform == "win32":
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _WriteFlow(asyncio.Protocol):
    """Flow control of the loop's write pipe: ``drain`` waits while the pipe is full."""

    def __init__(self) -> None:
        self._writable = asyncio.Event()
        self._writable.set()
        self._lost: BaseException | None = None

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or BrokenPipeError("the client closed the wire")
        self._writable.set()

    async def drain(self) -> None:
        await self._writable.wait()
        if self._lost is not None:
            raise self._lost


async def _loop_lines(fd: int) -> AsyncGenerator[str, None]:
    """The lines arriving on ``fd``, read by the event loop (a pipe or socket; see ``_pipe_or_socket``)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(fd, "rb", closefd=False)
    )
    try:
        while True:
            try:
                raw = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # EOF: a last line without its newline
                if end.partial:
                    yield end.partial.decode("utf-8", errors="replace")
                return
            yield raw.decode("utf-8", errors="replace")
    finally:
        transport.close()


async def _file_lines(fd: int) -> AsyncGenerator[str, None]:
    """The lines of a regular file on ``fd``, each read on a worker thread (a read of a file never
    blocks for long: it returns at the end of the file, so Ctrl-C is never held up here)."""
    # closefd=False: the reader thread may still block on the descriptor after we return.
    stdin = anyio.wrap_file(
        TextIOWrapper(os.fdopen(fd, "rb", closefd=False), encoding="utf-8", errors="replace")
    )
    async for line in stdin:
        yield line


def _regular_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


async def _thread_lines(fd: int) -> AsyncGenerator[str, None]:
    """The lines arriving on ``fd``, read by a daemon thread of its own (a terminal, Windows).

    Not a worker thread of the loop's pool: a blocked read of a terminal cannot be interrupted, so a
    pool thread would hold the task group's cancellation (Ctrl-C) until the next key press, and the
    interpreter's exit after it. A daemon thread is left blocked; the loop only waits on the stream.
    """
    # Room for a few lines: the reader stays one step ahead, and waits (back-pressure) beyond that.
    send, receive = anyio.create_memory_object_stream[str](16)
    token = anyio.lowlevel.current_token()

    def read_all() -> None:
        # closefd=False: the descriptor belongs to guarded_stdio, which restores it on exit.
        stream = TextIOWrapper(os.fdopen(fd, "rb", closefd=False), encoding="utf-8", errors="replace")
        try:
            for line in stream:
                anyio.from_thread.run(send.send, line, token=token)
            anyio.from_thread.run_sync(send.close, token=token)
        except (RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the loop has ended or stopped listening: nobody is left to hand a line to

    threading.Thread(target=read_all, name="cpersona-stdin", daemon=True).start()
    async with receive:
        async for line in receive:
            yield line


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """(read_stream, write_stream) for ``Server.run``, fed by a reader that answers unreadable lines."""
    wire_in, wire_out, restore = _claim_std_streams()
    try:
        asyncio.get_running_loop()
        on_loop = _pipe_or_socket(wire_in) and _pipe_or_socket(wire_out)
    except RuntimeError:  # another event loop than asyncio's (anyio on trio)
        on_loop = False
    stdout = TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_send.clone()  # the reader answers refusals on the same wire as the session

    async def reader() -> None:
        if on_loop:
            lines = _loop_lines(wire_in)
        elif _regular_file(wire_in):
            lines = _file_lines(wire_in)
        else:
            lines = _thread_lines(wire_in)
        # aclosing: the loop's read transport is closed here, not whenever the generator is collected.
        async with read_send, replies, aclosing(lines):
            try:
                async for line in lines:
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
            except anyio.BrokenResourceError:
                # The session ended (a stop: Ctrl-C, SIGTERM) while a message waited to be handed
                # over; nobody is left to answer it. Raised, it made a clean stop exit 1.
                return

    async def writer() -> None:
        async with write_recv:
            if on_loop:
                loop = asyncio.get_running_loop()
                transport, flow = await loop.connect_write_pipe(
                    _WriteFlow, os.fdopen(wire_out, "wb", closefd=False)
                )
                # Nothing stays buffered: drain returns once each message is in the pipe, as the
                # blocking write did (a reply is never left behind when the session ends).
                transport.set_write_buffer_limits(high=0)
                try:
                    async for outgoing in write_recv:
                        line = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                        transport.write(line.encode("utf-8"))  # what the pipe takes now; the rest is buffered
                        await flow.drain()
                finally:
                    transport.close()
                return
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
        if on_loop:  # the pipe transports made the wire non-blocking; fds 0 and 1 get it back as it was
            for fd in (wire_in, wire_out):
                os.set_blocking(fd, True)
        restore()
