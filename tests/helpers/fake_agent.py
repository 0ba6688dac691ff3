"""A stand-in for `claude -p` at the process boundary (the real CLIs are tests/e2e): it records
where and how it ran and answers recall's three prompts the way a model would."""

from __future__ import annotations

import os
import sys

FAKE_CLAUDE = r'''#!{python}
"""A stand-in for `claude -p` at the process boundary: records where and how it ran, and
answers recall's three prompts the way a model would."""
import json, os, re, sys
prompt = sys.stdin.read()
with open({record!r}, "a") as fh:
    fh.write(json.dumps({{"cwd": os.getcwd(), "files": os.listdir("."), "argv": sys.argv[1:],
                         "generating": os.environ.get("RECALL_GENERATING"), "tmpdir": os.environ.get("TMPDIR"),
                         "prompt": prompt}}) + "\n")
stems = re.findall(r"^### (.+)\.md$", prompt, flags=re.M)
if "for which NONE of the notes is relevant" in prompt:
    lines = [json.dumps({{"text": t, "lang": "en", "kind": "general"}}) for t in ["rename a git branch?", "thanks"]]
elif "restate its header" in prompt:
    lines = [json.dumps({{"note": s, "restatements": [s + " restated"]}}) for s in stems]
else:
    lines = [json.dumps({{"note": s, "questions": ["zq " + s + " when does this apply?"]}}) for s in stems]
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "\n".join(lines)}}))
'''


def fake_claude(tmp_path):
    fake_bin, record = tmp_path / "bin", tmp_path / "record.jsonl"
    fake_bin.mkdir()
    (fake_bin / "claude").write_text(FAKE_CLAUDE.format(python=sys.executable, record=str(record)))
    (fake_bin / "claude").chmod(0o755)
    return record, {"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "RECALL_QUESTIONS_GENERATE": "claude"}
