"""``python -m mcpwire`` is the ``mcpwire`` command."""

from __future__ import annotations

import sys

__all__ = ("main",)


def main(argv: list[str] | None = None) -> int:
    from ._cli import run

    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
