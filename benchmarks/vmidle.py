"""How an idle virtual CPU waits: the guest's cpuidle policy (Linux, read from /sys).

A sequential stdio pair blocks twice a round trip, once in each process, and each
time the peer's write has to wake it. On a KVM guest a virtual CPU with nothing to
run either halts, and then its waker pays an interrupt through the hypervisor
(15-25 µs a wake-up on the benchmark VM, ``timeline.py``), or first polls for a
while in the guest kernel's idle loop (the ``haltpoll`` cpuidle driver, up to
``guest_halt_poll_ns``), and then a write that comes in time wakes it for about
the price of a function call. The kernel's default is 200 µs of polling; the
benchmark VM boots with it off (``haltpoll.guest_halt_poll_ns=0`` on its kernel
command line), which spares the host the polling and costs every stdio pair,
ours and the reference's, its wake-ups.

The polling happens in the kernel's idle loop, not in either process: it burns
the host's CPU, not the processes', and it is not something a library can do or
should ask for. The reports print the policy in their header, and ``run.py``,
``timeline.py`` and ``bounds.py`` take ``--guest-halt-poll NS`` to run under
another value (writing the parameter needs root) and put the old one back after.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

__all__ = ("HALT_POLL", "add_option", "describe", "guest_halt_poll")

DRIVER = Path("/sys/devices/system/cpu/cpuidle/current_driver")
HALT_POLL = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def describe() -> str:
    """The idle policy in one phrase, for a report's header."""
    driver = _read(DRIVER)
    if driver is None:
        return "unknown (no cpuidle in /sys)"
    ns = _read(HALT_POLL)
    if ns is None or not ns.isdigit():
        return f"cpuidle driver {driver}"
    polling = "off" if ns == "0" else f"up to {int(ns) / 1000:g} µs"
    return f"cpuidle driver {driver}, guest halt polling {polling} (guest_halt_poll_ns {ns})"


@contextlib.contextmanager
def guest_halt_poll(ns: int | None) -> Iterator[None]:
    """Run the body with the guest's halt polling at ``ns`` (``None``: as it is).

    Raises ``OSError`` where the parameter does not exist or cannot be written."""
    if ns is None:
        yield
        return
    old = HALT_POLL.read_text().strip()
    HALT_POLL.write_text(str(ns))
    try:
        yield
    finally:
        HALT_POLL.write_text(old)


def add_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--guest-halt-poll NS`` for a script: ``what`` says what runs under it."""
    parser.add_argument(
        "--guest-halt-poll",
        type=int,
        metavar="NS",
        help=f"{what} with the guest kernel's halt polling at NS (root; KVM guests with "
        "the haltpoll cpuidle driver; the old value is put back after): see vmidle.py",
    )
