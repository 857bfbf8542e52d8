"""The package is mypy-strict clean and ruff clean; the public surface is explicit."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import mcpwire
import mcpwire.sansio

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_mypy_strict_is_clean() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_is_clean() -> None:
    result = _run(
        sys.executable, "-m", "ruff", "check", "mcpwire", "tests", "benchmarks", "conformance"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _run(
        sys.executable,
        "-m",
        "ruff",
        "format",
        "--check",
        "mcpwire",
        "tests",
        "benchmarks",
        "conformance",
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("module", [mcpwire, mcpwire.sansio], ids=lambda m: m.__name__)
def test_all_is_sorted_complete_and_resolvable(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    assert isinstance(names, tuple)
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(module, name) is not None, name


def test_every_private_module_declares_all() -> None:
    for info in pkgutil.walk_packages(mcpwire.__path__, "mcpwire."):
        if info.name.endswith("__main__") or ".examples" in info.name:
            continue
        module = importlib.import_module(info.name)
        assert isinstance(getattr(module, "__all__", None), tuple), info.name
