"""The notes folder the recommended flow's tests write questions for."""

from __future__ import annotations

import pytest

from helpers.notes import write_note


@pytest.fixture
def folder(tmp_path):
    f = tmp_path / "memory"
    write_note(f, "deploy-freeze", "No deploys on Friday", "Production deploys stop Friday noon",
               "We froze deploys after the outage of March.")
    write_note(f, "zeitzone-utc", "タイムスタンプはUTC", "DBの時刻はUTCで保存する", "表示のときだけ変換する。")
    write_note(f, "decimal-money", "Money is Decimal", "Amounts are Decimal, never float", "Quantize every amount.")
    (f / "MEMORY.md").write_text("- index\n", encoding="utf-8")
    return f
