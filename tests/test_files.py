"""``replace_file``: the token store's and the tool cache's whole-file writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcpwire._files import replace_file


def test_a_file_is_replaced_whole_and_private(tmp_path: Path) -> None:
    target = tmp_path / "store.json"
    target.write_bytes(b"old")
    replace_file(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert os.listdir(tmp_path) == ["store.json"]


def test_a_failed_replace_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # a directory cannot be renamed over
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        replace_file(target, b"data")
    assert os.listdir(tmp_path) == ["taken"]
    assert (target / "inside").read_text() == "kept"
    with pytest.raises(OSError):
        replace_file(tmp_path / "no-such-folder" / "x", b"data")
