#!/bin/sh
# Lay out an older commit's batonflow as an importable package directory, for the benchmarks'
# --before option (measured side by side with the current code):
#   sh bench/before_tree.sh 33454b7 /tmp/before && .venv/bin/python bench/http_compare.py --before /tmp/before/pkg
set -eu
commit=$1
out=$2
mkdir -p "$out/src"
git archive "$commit" | tar -x -C "$out/src"
if [ -d "$out/src/src/batonflow" ]; then
    # src/batonflow is the package (its own files, links to ../../core and the rest)
    ln -sfn "$out/src/src" "$out/pkg"
else
    # older commits: batonflow/ at the root, the rooms beside it
    mkdir -p "$out/pkg/batonflow"
    for f in "$out"/src/batonflow/*; do ln -sf "$f" "$out/pkg/batonflow/"; done
    for d in core agents rag observability apps client postgres; do
        ln -sfn "$out/src/$d" "$out/pkg/batonflow/$d"
    done
fi
echo "$out/pkg"
