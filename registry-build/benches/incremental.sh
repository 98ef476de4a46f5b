#!/usr/bin/env bash
# Incremental rebuild time of examples/catalog-client, whose build.rs runs registry-build over
# tools/records, tools/policies and tools/envelope.json.
#
#   bash registry-build/benches/incremental.sh [RUNS]
#
# 1. warm-up build (not timed);
# 2. RUNS no-change builds: cargo finds every rerun-if-changed input unchanged, runs nothing;
# 3. RUNS builds after `touch tools/records/web_search.json` (same content, new mtime): the build
#    script reruns (load + generate), rewrites nothing (the output text is identical), and cargo
#    recompiles the example crate.
# Prints the median of each, in milliseconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
pkg=escepine-example-catalog-client
record=tools/records/web_search.json

cargo build -q -p "$pkg"

ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

nochange=()
for _ in $(seq "$runs"); do
  s=$(ms); cargo build -q -p "$pkg"; e=$(ms); nochange+=($((e - s)))
done

touched=()
for _ in $(seq "$runs"); do
  touch "$record"
  s=$(ms); cargo build -q -p "$pkg"; e=$(ms); touched+=($((e - s)))
done

echo "no-change build:          median $(printf '%s\n' "${nochange[@]}" | median) ms  (runs: ${nochange[*]})"
echo "record touched, same text: median $(printf '%s\n' "${touched[@]}" | median) ms  (runs: ${touched[*]})"
