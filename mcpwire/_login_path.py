"""The PATH a login shell gives, for hosts started without one (pain point #3).

An application started from a desktop (a chat client, an editor launched from
the dock) does not run the user's shell startup files, so its PATH lacks what
nvm, Homebrew, pyenv or uv add there, and servers run with ``npx`` or ``uvx``
fail to start. ``login_shell_path`` asks the user's login shell once: it runs
``$SHELL -l -i -c SCRIPT`` with a fixed script (nothing from configs or users
reaches the shell, and servers are still started without one), without a
terminal (a new session) and with its input closed, and reads the PATH printed
between two markers, so whatever the startup files print is ignored. A shell
that fails, or does not answer within ``timeout``, gives ``None``; its session
(the shell and whatever its startup files started) is killed then. POSIX only
(``None`` on Windows, whose PATH does not depend on how a program was started).

A host applies it once, before it starts servers::

    path = await login_shell_path()
    if path is not None:
        os.environ["PATH"] = merge_paths(path, os.environ.get("PATH", ""))

``mcpwire hub --login-path`` does that.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

import anyio

__all__ = ("login_shell_path", "merge_paths")

_BEGIN = "__MCPWIRE_PATH_BEGIN__"
_END = "__MCPWIRE_PATH_END__"
#: ``printf`` with the markers as separate arguments: the same in sh, bash, zsh
#: and fish, and no brace syntax that one of them reads differently.
_SCRIPT = f"printf '%s%s%s' {_BEGIN} \"$PATH\" {_END}"
#: Bound on what the shell may print (startup files can be chatty).
_MAX_OUTPUT = 1 << 20


async def login_shell_path(shell: str | None = None, *, timeout: float = 5.0) -> str | None:
    """The PATH of ``shell`` (default: ``$SHELL``, else ``/bin/sh``) as a login
    shell, or ``None`` when it cannot be learned (see the module docstring)."""
    if sys.platform == "win32":
        return None
    shell = shell or os.environ.get("SHELL") or "/bin/sh"
    try:
        process = await anyio.open_process(
            [shell, "-l", "-i", "-c", _SCRIPT],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    out = b""
    try:
        with anyio.move_on_after(timeout) as scope:
            assert process.stdout is not None
            async for chunk in process.stdout:
                out = (out + chunk)[-_MAX_OUTPUT:]
            await process.wait()
    finally:
        if process.returncode is None:
            # Its whole session: what a startup file started goes with it.
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if scope.cancelled_caught:
        return None
    text = out.decode("utf-8", "replace")
    start, end = text.rfind(_BEGIN), text.rfind(_END)
    if start < 0 or end < start:
        return None
    path = text[start + len(_BEGIN) : end]
    return path if path and "\n" not in path and "\0" not in path else None


def merge_paths(first: str, second: str) -> str:
    """``first``'s directories, then those of ``second`` not already in it."""
    seen: list[str] = []
    for part in (*first.split(os.pathsep), *second.split(os.pathsep)):
        if part and part not in seen:
            seen.append(part)
    return os.pathsep.join(seen)
