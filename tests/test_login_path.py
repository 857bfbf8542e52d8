"""The login shell's PATH for hosts started from a desktop (pain point #3).

Real shells: ``/bin/sh`` as a login shell reading a ``.profile`` in a temporary
home, and small shell scripts standing in for shells that hang, chatter or
fail. The hub's ``--login-path`` is run end to end: a server whose command is
only on the login shell's PATH starts with it and fails without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import login_shell_path, merge_paths


def fake_shell(tmp_path: Path, body: str) -> str:
    """An executable standing in for a shell: ``body`` is its sh script."""
    path = tmp_path / "fake-shell"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.anyio
async def test_a_real_login_shell_reads_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    """``sh -l`` reads ``~/.profile``: what it adds to PATH (as nvm or Homebrew
    setups do) is in the answer, and what the profile prints is not."""
    (tmp_path / ".profile").write_text(
        'echo "Welcome back"\nPATH="/opt/fake-node/bin:$PATH"\nexport PATH\n'
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = await login_shell_path("/bin/sh")
    assert path is not None
    assert path.split(":")[0] == "/opt/fake-node/bin"
    assert "Welcome" not in path


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Chatter around the answer (an rc file's banner, a prompt) is ignored.
        (
            'echo "motd"; printf "%s%s%s" __MCPWIRE_PATH_BEGIN__ /a:/b __MCPWIRE_PATH_END__;'
            " echo x",
            "/a:/b",
        ),
        ('echo "no markers at all"', None),
        ("exit 3", None),
        ('printf "%s%s%s" __MCPWIRE_PATH_BEGIN__ "" __MCPWIRE_PATH_END__', None),
    ],
    ids=["chatter", "no-markers", "fails", "empty"],
)
async def test_what_the_shell_prints_decides(
    tmp_path: Path, anyio_backend: str, body: str, expected: str | None
) -> None:
    assert await login_shell_path(fake_shell(tmp_path, body)) == expected


@pytest.mark.anyio
async def test_a_shell_that_hangs_gives_none_and_leaves_nothing_running(
    tmp_path: Path, anyio_backend: str
) -> None:
    """A startup file that never returns: ``None`` at the timeout, and the
    shell's whole session is killed, what it started included."""
    pid_file = tmp_path / "child.pid"
    shell = fake_shell(tmp_path, f"sleep 30 &\necho $! > {pid_file}\nwait\n")
    started = time.monotonic()
    assert await login_shell_path(shell, timeout=0.5) is None
    assert time.monotonic() - started < 5
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)


def _running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (killed, not reaped yet)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@pytest.mark.anyio
async def test_a_missing_shell_gives_none(tmp_path: Path, anyio_backend: str) -> None:
    assert await login_shell_path(str(tmp_path / "no-such-shell")) is None


parts = st.lists(st.sampled_from(["/a", "/b", "/c", "/usr/bin", ""]), max_size=6)


@given(first=parts, second=parts)
def test_merge_paths_keeps_order_and_drops_repeats(first: list[str], second: list[str]) -> None:
    merged = merge_paths(":".join(first), ":".join(second)).split(":")
    wanted = [p for p in dict.fromkeys(first + second) if p]
    assert merged == (wanted or [""])


def test_hub_login_path_starts_a_server_only_the_login_shell_can_find(tmp_path: Path) -> None:
    """``mcpwire hub --login-path``: a server whose command lives in a directory
    only the login shell puts on PATH is ready with the flag and failed without."""
    bin_dir = tmp_path / "login-bin"
    bin_dir.mkdir()
    server = bin_dir / "only-on-login-path"
    server.write_text(
        f"#!{sys.executable}\nimport runpy\n"
        "runpy.run_module('mcpwire.examples.everything', run_name='__main__')\n"
    )
    server.chmod(0o755)
    shell = fake_shell(
        tmp_path, f'printf "%s%s%s" __MCPWIRE_PATH_BEGIN__ "{bin_dir}:$PATH" __MCPWIRE_PATH_END__'
    )
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"s": {"command": server.name}}}))

    def run(*flags: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "mcpwire", "hub", "--config", str(config), "--json", *flags],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "SHELL": shell},
        )
        state: str = json.loads(proc.stdout)["servers"][0]["state"]
        return state

    assert run() == "failed"
    assert run("--login-path") == "ready"
