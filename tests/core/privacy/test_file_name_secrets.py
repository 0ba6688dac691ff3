"""A secret joined to its name in a file's name (``token-X.md``, ``pw_X.mp4``) is nowhere recall
keeps or shows it: a note named by its file had the path masked and the name not, in the store,
the BM25 vocabulary (kept as UTF-32), the index's metadata, `recall search` and the hook (an
outside tester's, stop 58)."""

from __future__ import annotations

import json

from helpers.cli import run_cli

SECRET = "Lp4kR8sW2n"


def test_a_file_name_secret_is_in_no_file_of_the_home_and_no_answer(tmp_path, recall_home, hash_model):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / f"token-{SECRET}.md").write_text("---\nname: [broken\n---\nthe deploy runbook for staging\n")
    (notes / f"pw_{SECRET[::-1]}.md").write_text("the staging database runbook\n")
    (notes / f"creds {SECRET.upper()}.md").write_text("the staging database credentials\n")
    run_cli("index", "-q", notes, check=True)
    found = run_cli("search", "--json", "deploy runbook staging database", check=True).stdout
    assert "token-[REDACTED]" in found
    for secret in (SECRET, SECRET[::-1], SECRET.upper()):
        assert secret not in found
        forms = [secret.encode(enc) for enc in ("utf-8", "utf-16-le", "utf-32-le")]
        forms += [form.lower() for form in forms]  # the BM25 vocabulary is lower case
        for path in recall_home.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert not any(form in data for form in forms), (path, secret)
    assert json.loads(found)
