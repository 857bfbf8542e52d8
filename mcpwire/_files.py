"""Replacing a file whole, so a reader never sees half of it.

The data goes to a temporary file in the same folder (made by ``mkstemp``: mode
0600, a name no one else holds), is flushed to the disk, and is renamed over
the target. A crash or a full disk leaves the old file as it was, and the
temporary one is removed. The token store and the hub's tool cache write
through this.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ("replace_file",)


def replace_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` as the new content of ``path`` (see the module docstring).
    Raises ``OSError``; the folder must exist."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
