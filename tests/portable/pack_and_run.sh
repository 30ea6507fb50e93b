#!/usr/bin/env bash
# scripts/portable_bench.sh end to end, quickly: a small corpus prepared from the repository's
# Markdown, the given fivefold binary packed (with the bundled Open MPI), the tarball unpacked into
# a fresh folder and its run.sh run with a bare environment (env -i PATH=/usr/bin:/bin), once with
# the host's mpirun and once with the bundled one; each must print the bench table with a number
# of tokens/s in every row. The binary is packed under two ISA labels, x86-64-v3 and
# x86-64-v4-bf16 (it is the test build: it runs here under either): run.sh must pick the label
# this CPU's /proc/cpuinfo flags cover, as this script reads them, and --variant x86-64-v3 must
# run and train. The C++ runtime goes in lib-cxx/, which run.sh leaves off the path where the
# host's serves (a newer host one must win: the host's own libraries may need it).
set -euo pipefail
fivefold=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat "$root"/README.md "$root"/docs/*.md "$root"/src/*/README.md >"$work/text.txt"
"$fivefold" prepare --text "$work/text.txt" --vocab 1024 --out "$work/corpus" >"$work/prepare.log" 2>&1 ||
  { cat "$work/prepare.log"; exit 1; }
FIVEFOLD_PACK_GZIP=1 bash "$root/scripts/portable_bench.sh" pack "$work/pack.tar.gz" --binary "$fivefold:x86-64-v3" \
  --binary "$fivefold:x86-64-v4-bf16" --data "$work/corpus"
mkdir "$work/host"
tar -C "$work/host" -xzf "$work/pack.tar.gz"
check_table() {  # log, expected rows
  local rows
  rows=$(grep -cE '^\| tiny \| [0-9]+ x [0-9]+ \| (fp32|bf16) \| [0-9]+ \|$' "$1" || true)
  [ "$rows" = "$2" ] || { echo "expected $2 rows of tokens/s, got $rows:"; cat "$1"; exit 1; }
}
cd "$work/host/fivefold-portable"
env -i PATH=/usr/bin:/bin ./run.sh --models tiny --steps 2 --warmup 1 --no-plan >"$work/host.log" 2>&1 ||
  { cat "$work/host.log"; exit 1; }
grep -q "MPI: host" "$work/host.log" || { cat "$work/host.log"; exit 1; }
# The C++ runtime is packed apart and taken only where the host's is missing or older: here the
# host's is the build's own, so the host's.
[ -e lib-cxx/libstdc++.so.6 ] && [ ! -e lib/libstdc++.so.6 ] || { echo "libstdc++ not packed in lib-cxx/ alone"; ls lib lib-cxx; exit 1; }
grep -q "C++ runtime: the host's" "$work/host.log" || { echo "run.sh took the pack's C++ runtime here:"; cat "$work/host.log"; exit 1; }
check_table "$work/host.log" 4  # fp32, bf16, then 1 x 2 and 2 x 1 in the sweep
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
want=x86-64-v4-bf16
for f in avx512f avx512bw avx512cd avx512dq avx512vl avx512_bf16; do
  case "$flags" in *" $f "*) ;; *) want=x86-64-v3 ;; esac
done
grep -q "^fivefold $want on " "$work/host.log" || { echo "run.sh did not pick $want:"; cat "$work/host.log"; exit 1; }
env -i PATH=/usr/bin:/bin ./run.sh --models tiny --steps 2 --warmup 1 --no-plan --no-sweep --variant x86-64-v3 \
  >"$work/v3.log" 2>&1 || { cat "$work/v3.log"; exit 1; }
grep -q "^fivefold x86-64-v3 on " "$work/v3.log" || { echo "--variant x86-64-v3 not taken:"; cat "$work/v3.log"; exit 1; }
check_table "$work/v3.log" 2  # fp32, bf16
env -i PATH=/usr/bin:/bin ./run.sh --models tiny --steps 2 --warmup 1 --no-plan --mpi bundled >"$work/bundled.log" 2>&1 ||
  { cat "$work/bundled.log"; exit 1; }
grep -q "MPI: bundled" "$work/bundled.log" || { cat "$work/bundled.log"; exit 1; }
check_table "$work/bundled.log" 4
echo "portable pack: run.sh picked $want here; the host, bundled MPI and forced x86-64-v3 runs printed their tables"
