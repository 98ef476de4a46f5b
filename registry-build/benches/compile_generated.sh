#!/usr/bin/env bash
# Compile time of the code registry-build generates for N synthetic records (default 100):
# `cargo bench --bench codegen -- --emit DIR N` writes a crate including it, which is built once
# (its dependencies: serde, serde_json, escepine-contract), then rebuilt RUNS times after a touch
# of the generated file, timing rustc on the generated code alone (debug, then release).
#
#   bash registry-build/benches/compile_generated.sh 100 3
set -euo pipefail
n="${1:-100}"
runs="${2:-3}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cargo bench -q -p escepine-registry-build --bench codegen -- --emit "$dir" "$n"
cp "$root/Cargo.lock" "$dir/Cargo.lock"
echo "generated: $(wc -l < "$dir/src/tools.rs") lines, $(($(wc -c < "$dir/src/tools.rs") / 1024)) KiB"
for profile in dev release; do
  (cd "$dir" && cargo build -q --offline --profile "$profile")
  for i in $(seq "$runs"); do
    touch "$dir/src/tools.rs"
    start=$(date +%s.%N)
    (cd "$dir" && cargo build -q --offline --profile "$profile")
    end=$(date +%s.%N)
    echo "$profile build of the generated code, run $i: $(awk "BEGIN{printf \"%.2f\", $end - $start}") s"
  done
done
