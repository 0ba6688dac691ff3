#!/usr/bin/env bash
# What `recall` prints on the sample notes with the hash model: index, query --explain/--json
# (timings dropped), the hook's answer, every --help. Run it on two checkouts and diff:
#   scripts/explain_same.sh /work/main /tmp/a; scripts/explain_same.sh . /tmp/b; diff -r /tmp/a /tmp/b
set -euo pipefail
TREE=$(cd "$1" && pwd); OUT=$2; mkdir -p "$OUT"
PY=${PY:-python}
export PYTHONPATH=$TREE RECALL_MODEL=hash RECALL_HOME=${RECALL_HOME:-/tmp/recall-explain-same}
rm -rf "$RECALL_HOME"
NOTES=$(cd "$(dirname "$0")/.." && pwd)/datasets/sample/notes
"$PY" -m recall.cli index -q "$NOTES" 2>&1 | sed -E 's/ in [0-9.]+ s$//' > "$OUT/index.txt"
for q in "Decimal not float for money amounts" "how do I run the tests" "thanks, that worked" \
         "deploy to production on friday"; do
  "$PY" -m recall.cli query --all --explain "$q" 2>&1 | sed -E 's/[0-9.]+ ms/X ms/g'
  "$PY" -m recall.cli query --all --json "$q" | "$PY" -c \
    'import json,sys; d=json.load(sys.stdin); d.pop("timings_ms"); print(json.dumps(d))'
  "$PY" -m recall.cli query "$q" 2>&1
done > "$OUT/explain.txt"
for c in "" index calibrate query status config models serve stop install uninstall log watch mcp team ui \
         "team push"; do
  # shellcheck disable=SC2086
  "$PY" -m recall.cli $c --help
done > "$OUT/help.txt" 2>&1
