"""``FDWriter.drain``: a buffer larger than the pipe, written as the peer makes room.

On asyncio the loop's writability callback writes each piece and wakes the
caller once; on trio the caller waits on ``wait_writable``. Either way: every
byte arrives once and in order, ``left`` says at any moment what the peer has
not got (also after a cancel), a peer that goes away fails the drain with
``BrokenResourceError``, and closing the writer fails a waiting drain at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwire._fdio import FDWriter

pytestmark = pytest.mark.anyio

WAIT = 10.0


def _pipe() -> tuple[int, FDWriter]:
    read_fd, write_fd = os.pipe()
    return read_fd, FDWriter(write_fd, owned=True)


async def _read_until(read_fd: int, size: int, chunk: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        await anyio.wait_readable(read_fd)
        got += os.read(read_fd, chunk)
    return bytes(got)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.integers(min_value=0, max_value=600_000),
    chunk=st.sampled_from([1000, 4096, 65536, 1 << 20]),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_every_byte_arrives_once_in_order(size: int, chunk: int, backend: str) -> None:
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)

    async def main() -> bytes:
        read_fd, writer = _pipe()
        try:
            async with anyio.create_task_group() as tg:
                received: list[bytes] = []

                async def read() -> None:
                    received.append(await _read_until(read_fd, size, chunk))

                tg.start_soon(read)
                await writer.drain(memoryview(data))
                assert len(writer.left) == 0
            return received[0]
        finally:
            writer.close()
            os.close(read_fd)

    assert anyio.run(main, backend=backend) == data


async def test_a_cancelled_drain_leaves_exactly_the_unread_part() -> None:
    data = os.urandom(1_000_000)  # many times a pipe's capacity
    read_fd, writer = _pipe()
    try:
        with anyio.move_on_after(0.2):
            await writer.drain(memoryview(data))
        left = bytes(writer.left)
        assert 0 < len(left) < len(data)
        os.set_blocking(read_fd, False)
        taken = bytearray()
        while True:
            try:
                piece = os.read(read_fd, 1 << 20)
            except BlockingIOError:
                break
            taken += piece
        assert bytes(taken) + left == data
        # The writer is still usable: the rest goes out whole after a cancel.
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                rest: list[bytes] = []

                async def read() -> None:
                    rest.append(await _read_until(read_fd, len(left), 65536))

                tg.start_soon(read)
                await writer.drain(memoryview(left))
        assert bytes(taken) + rest[0] == data
    finally:
        writer.close()
        os.close(read_fd)


async def _drain_failing(
    writer: FDWriter, meanwhile: Callable[[], None], error: type[Exception]
) -> None:
    """Drain many times a pipe's capacity, run ``meanwhile`` 50 ms in; ``error`` ends it."""
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:

            async def later() -> None:
                await anyio.sleep(0.05)
                meanwhile()

            tg.start_soon(later)
            with pytest.raises(error):
                await writer.drain(memoryview(b"z" * 1_000_000))


async def test_a_peer_gone_mid_drain_fails_it_with_broken_resource() -> None:
    read_fd, writer = _pipe()

    def go_away() -> None:
        os.read(read_fd, 1000)  # some progress first
        os.close(read_fd)

    try:
        await _drain_failing(writer, go_away, anyio.BrokenResourceError)
        assert 0 < len(writer.left) < 1_000_000
    finally:
        writer.close()


async def test_closing_the_writer_fails_a_waiting_drain_at_once() -> None:
    read_fd, writer = _pipe()
    try:
        await _drain_failing(writer, writer.close, anyio.ClosedResourceError)
        with pytest.raises(anyio.ClosedResourceError):
            await writer.drain(memoryview(b"more"))
    finally:
        writer.close()
        os.close(read_fd)
