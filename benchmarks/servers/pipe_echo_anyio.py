"""The pipe-echo child with an anyio event loop: wait_readable, os.read, os.write.

It echoes whole lines (input is newline-delimited) and is the floor for any
anyio-based stdio server: no framing beyond finding the newline, no JSON.
``serve`` is also the loop of ``anyio_floor.py``, with canned answers instead of echoes.
"""

import os
from collections.abc import Callable

import anyio


def _same(lines: bytes) -> bytes:
    return lines


async def serve(reply: Callable[[bytes], bytes] = _same) -> None:
    """Read stdin; write ``reply`` of each run of whole lines as it arrives."""
    os.set_blocking(0, False)
    buf = b""
    while True:
        await anyio.wait_readable(0)
        chunk = os.read(0, 65536)
        if not chunk:
            return
        buf += chunk
        end = buf.rfind(b"\n") + 1
        if end:
            out, buf = reply(buf[:end]), buf[end:]
            while out:
                out = out[os.write(1, out) :]


if __name__ == "__main__":
    anyio.run(serve)
