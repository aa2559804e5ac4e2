#!/bin/sh
# Lay out an older commit's batonflow as an importable package directory, for the benchmarks'
# --before option (measured side by side with the current code):
#   sh bench/before_tree.sh 33454b7 /tmp/before && .venv/bin/python bench/http_compare.py --before /tmp/before
set -eu
commit=$1
out=$2
mkdir -p "$out/src" "$out/pkg/batonflow"
git archive "$commit" | tar -x -C "$out/src"
# the archive holds the package at src/batonflow (its rooms are symlinks to the top folders)
for f in "$out"/src/src/batonflow/*; do ln -sf "$f" "$out/pkg/batonflow/"; done
for d in core agents rag observability apps client postgres; do
    ln -sfn "$out/src/$d" "$out/pkg/batonflow/$d"
done
echo "$out/pkg"
