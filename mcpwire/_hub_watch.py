"""Watching config files and ``watchPaths`` by polling, with no new dependency.

Theory of operation
-------------------
Every ``interval`` seconds each watched path is looked at with ``stat``: its
inode, device, size and modification and change times, and the same for the
directory holding it. Names are looked up afresh each time, so an editor's
atomic save (write a temporary file, rename it over the original) is seen as
a new inode under the same name, and a file that is deleted and recreated is
seen too. A change of signature is confirmed by content: a file whose bytes
hash the same as last time did not change (an unrelated file in the same
directory touched the directory's times; a ``touch`` changed only the times).
A directory in ``watchPaths`` is compared by the names, sizes and times of
its direct entries.

Changes are debounced: after the first change the watcher keeps polling until
``debounce`` seconds pass with no further change, then reports every path that
changed during the burst at once. Editors that save in several steps, and
tools that rewrite a file twice, cause one reload rather than several.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Awaitable, Callable, Iterable

import anyio

__all__ = ("DEFAULT_DEBOUNCE", "DEFAULT_POLL_INTERVAL", "PathWatcher")

DEFAULT_POLL_INTERVAL = 0.25
DEFAULT_DEBOUNCE = 0.5
#: Files larger than this are compared by their stat signature only.
_HASH_LIMIT = 4 * 1024 * 1024

_Signature = tuple[object, ...]


def _stat_sig(path: str) -> _Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _content(path: str) -> object:
    """What decides whether a path really changed: bytes hash, or directory listing."""
    try:
        if os.path.isdir(path):
            entries = []
            with os.scandir(path) as it:
                for entry in it:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    entries.append((entry.name, st.st_size, st.st_mtime_ns))
            return ("dir", tuple(sorted(entries)))
        size = os.path.getsize(path)
        if size > _HASH_LIMIT:
            return ("big", _stat_sig(path))
        with open(path, "rb") as f:
            return ("file", hashlib.sha256(f.read()).hexdigest())
    except OSError:
        return None


class PathWatcher:
    """Polls a set of paths and reports the ones whose content changed."""

    def __init__(
        self,
        paths: Iterable[str] = (),
        *,
        interval: float = DEFAULT_POLL_INTERVAL,
        debounce: float = DEFAULT_DEBOUNCE,
    ) -> None:
        if interval <= 0 or debounce < 0:
            raise ValueError("need interval > 0 and debounce >= 0")
        self.interval = interval
        self.debounce = debounce
        self._sigs: dict[str, tuple[_Signature | None, _Signature | None]] = {}
        self._contents: dict[str, object] = {}
        self.set_paths(paths)

    @property
    def paths(self) -> list[str]:
        return list(self._sigs)

    def set_paths(self, paths: Iterable[str]) -> None:
        """Watch exactly ``paths`` from now on; paths already watched keep their baseline."""
        wanted = {os.path.abspath(p) for p in paths}
        for path in list(self._sigs):
            if path not in wanted:
                del self._sigs[path]
                self._contents.pop(path, None)
        for path in wanted:
            if path not in self._sigs:
                self._sigs[path] = self._signature(path)
                self._contents[path] = _content(path)

    @staticmethod
    def _signature(path: str) -> tuple[_Signature | None, _Signature | None]:
        return _stat_sig(path), _stat_sig(os.path.dirname(path))

    def poll(self) -> set[str]:
        """One look at every path; returns those whose content changed since the last."""
        changed: set[str] = set()
        for path, old in list(self._sigs.items()):
            sig = self._signature(path)
            if sig == old:
                continue
            self._sigs[path] = sig
            content = _content(path)
            if content != self._contents.get(path):
                self._contents[path] = content
                changed.add(path)
        return changed

    async def run(self, on_change: Callable[[set[str]], Awaitable[None]]) -> None:
        """Poll forever; call ``on_change`` with each debounced burst of changed paths."""
        burst: set[str] = set()
        quiet_since = 0.0
        while True:
            await anyio.sleep(self.interval)
            changed = self.poll()
            now = anyio.current_time()
            if changed:
                burst |= changed
                quiet_since = now
            elif burst and now - quiet_since >= self.debounce:
                report, burst = burst, set()
                await on_change(report)
