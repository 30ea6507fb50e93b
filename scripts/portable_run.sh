#!/usr/bin/env bash
# fivefold's bench set on this host, from the folder scripts/portable_bench.sh packed (this file is
# its run.sh): nothing installed, nothing written outside a temporary folder.
#
#   run.sh [--steps 8] [--warmup 2] [--models bench] [--cores C] [--mpi auto|host|bundled|none]
#          [--variant LEVEL] [--max-cpu-isa base|avx512|avx512_bf16] [--no-sweep] [--no-plan] [--keep DIR]
#
# 1. Picks the binary for this CPU: the highest ISA level packed that /proc/cpuinfo's flags cover
#    (x86-64-v4-bf16: AVX-512 and avx512_bf16; x86-64-v4; x86-64-v3: AVX2, FMA, BMI2, MOVBE,
#    F16C), or --variant's; LD_LIBRARY_PATH is this folder's lib/ only. An x86-64-v3 binary
#    still runs its own kernels' AVX-512 / AVX512-BF16 tiers where the CPU has them (the
#    log says which); --max-cpu-isa caps that tier (FIVEFOLD_MAX_CPU_ISA), to compare them.
# 2. MPI: the host's own mpirun and libmpi when it has them (auto), else the bundled Open MPI
#    (OPAL_PREFIX=mpi/); without either, one rank only.
# 3. Serial runs of each model in fp32 and bf16 on every core; the ranks x threads sweep (R ranks
#    of C/R threads for R = 1, 2, 4 ... C, data parallel over the same global batch); then
#    `fivefold calibrate` and `fivefold plan`'s pick of ranks x threads for the model.
# 4. One table: run, ranks x threads, precision, tokens/s (timed tokens over timed seconds).
set -euo pipefail
HERE="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
steps=8 warmup=2 models=bench cores=$(nproc) mpi=auto variant="" max_isa="" sweep=1 plan=1 keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --mpi) mpi=$2; shift 2 ;;
    --variant) variant=$2; shift 2 ;;
    --max-cpu-isa) max_isa=$2; shift 2 ;;
    --no-sweep) sweep=0; shift ;;
    --no-plan) plan=0; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (run.sh --help)" >&2; exit 2 ;;
  esac
done

die() { echo "run.sh: $*" >&2; exit 1; }

# glibc: the binary and its libraries were linked against the build machine's.
built=$(cat "$HERE/GLIBC_BUILT_WITH")
host=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$host" ] && [ "$(printf '%s\n%s\n' "$built" "$host" | sort -V | head -1)" != "$built" ]; then
  die "this host's glibc is $host; the binaries need $built or newer (build on an older distribution)"
fi

# The binary for this CPU: the highest ISA level packed that /proc/cpuinfo's flags cover.
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do case "$flags" in *" $f "*) ;; *) return 1 ;; esac; done; }
supports() {
  case "$1" in
    x86-64-v4-bf16) has avx512f avx512bw avx512cd avx512dq avx512vl avx512_bf16 ;;
    x86-64-v4) has avx512f avx512bw avx512cd avx512dq avx512vl ;;
    x86-64-v3) has avx2 fma bmi2 movbe f16c ;;
    *) return 0 ;;  # a binary packed for this very machine (tests): the caller's choice
  esac
}
if [ -z "$variant" ]; then
  for v in x86-64-v4-bf16 x86-64-v4 x86-64-v3 native; do
    if [ -x "$HERE/bin/fivefold.$v" ] && supports "$v"; then variant=$v; break; fi
  done
  [ -n "$variant" ] || die "no packed binary runs on this CPU (packed: $(ls "$HERE/bin" | tr '\n' ' '); the CPU lacks AVX2/AVX-512 flags they need)"
fi
ff="$HERE/bin/fivefold.$variant"
[ -x "$ff" ] || die "no binary for --variant $variant in $HERE/bin"
case "$max_isa" in
  "") ;;
  base | avx512 | avx512_bf16) export FIVEFOLD_MAX_CPU_ISA=$max_isa ;;
  *) die "--max-cpu-isa is base, avx512 or avx512_bf16 (got '$max_isa')" ;;
esac

# MPI: the host's (its mpirun and the libmpi beside it), the bundled one, or none.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
libs="$HERE/lib"
host_mpirun=$(command -v mpirun || true)
if [ "$mpi" = auto ]; then
  if [ -n "$host_mpirun" ]; then mpi=host; elif [ -x "$HERE/mpi/bin/mpirun" ]; then mpi=bundled; else mpi=none; fi
fi
case "$mpi" in
  host)
    [ -n "$host_mpirun" ] || die "--mpi host: no mpirun on PATH"
    mpirun=$host_mpirun
    mpi_lib="$(dirname "$(readlink -f "$host_mpirun")")/../lib"
    [ -d "$mpi_lib" ] && libs="$libs:$mpi_lib"
    # A host whose libmpi is not where its mpirun is nor on the loader's path: the bundled one.
    if LD_LIBRARY_PATH="$libs" ldd "$ff" | grep -q "libmpi.*not found"; then libs="$libs:$HERE/lib-mpi"; fi ;;
  bundled)
    [ -x "$HERE/mpi/bin/mpirun" ] || die "--mpi bundled: this pack has no Open MPI (packed with --no-mpi)"
    export OPAL_PREFIX="$HERE/mpi" PATH="$HERE/mpi/bin:$PATH"
    mpirun="$HERE/mpi/bin/mpirun"
    libs="$HERE/lib-mpi:$libs" ;;
  none) mpirun=""; libs="$HERE/lib-mpi:$libs" ;;
  *) die "--mpi is auto, host, bundled or none (got '$mpi')" ;;
esac
# The pack's C++ runtime only where the host's is missing or too old for the binary.
. "$HERE/portable_cxx.sh"
with_cxx=$(pack_cxx_first "$HERE" "$ff" "$libs")
cxx="the host's"
[ "$with_cxx" != "$libs" ] && cxx="the pack's (the host's is missing or older than the build's)"
libs=$with_cxx
export LD_LIBRARY_PATH="$libs"
if LD_LIBRARY_PATH="$libs" ldd "$ff" | grep -q "not found"; then
  die "libraries missing for $ff: $(LD_LIBRARY_PATH="$libs" ldd "$ff" | grep 'not found' | tr -s ' \t' ' ')"
fi

work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
data="$HERE/data/corpus"

# R ranks of the command; one rank runs without a launcher when there is no MPI.
launch() {
  local ranks=$1; shift
  if [ -n "$mpirun" ]; then "$mpirun" --oversubscribe --bind-to none -np "$ranks" "$@"
  elif [ "$ranks" = 1 ]; then "$@"
  else return 3; fi
}

# Timed tokens over timed seconds of a run's metrics.jsonl (the first `warmup` steps dropped).
tokens_per_s() {
  sed -n 's/.*"step_seconds":\([0-9.e+-]*\).*"tokens_per_s":\([0-9.e+-]*\).*/\1 \2/p' "$1/metrics.jsonl" |
    awk -v w="$warmup" 'NR > w {t += $1; n += $1 * $2} END {if (t > 0) printf "%.0f", n / t; else print "?"}'
}

rows=()
train() {  # model ranks threads precision [layout]
  local model=$1 ranks=$2 threads=$3 precision=$4 layout=${5:-} out="$work/run-$1-$2x$3-$4"
  rm -rf "$out"
  local args=(train --config "$HERE/configs/$model.toml" --data "$data" --out "$out" --steps $((steps + warmup))
              --eval-every 0 --log-every 1000)
  if [ -n "$layout" ]; then args+=(--layout "$layout,precision=$precision,threads=$threads")
  else args+=(--precision "$precision" --threads "$threads"); fi
  local rc=0
  launch "$ranks" "$ff" "${args[@]}" >"$out.log" 2>&1 || rc=$?
  if [ $rc = 3 ]; then rows+=("| $model | $ranks x $threads | $precision | (needs MPI) |"); return 0; fi
  if [ $rc != 0 ]; then
    tail -5 "$out.log" >&2
    die "$model at $ranks x $threads ($precision) failed; its log: $out.log (--keep DIR keeps it)"
  fi
  rows+=("| $model | $ranks x $threads | $precision | $(tokens_per_s "$out") |")
  [ -n "$kernels" ] || kernels=$(grep -m1 "own kernels (attention" "$out.log" || echo "the build's own target")
}
kernels=""

echo "fivefold $variant on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $cores cores," \
  "MPI: $mpi${mpirun:+ ($mpirun)}; C++ runtime: $cxx; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
picks=()
for model in ${models//,/ }; do
  [ -f "$HERE/configs/$model.toml" ] || die "no configs/$model.toml in the pack (bench, small, tiny)"
  batch=$(awk -F= '/^micro_batch/ {sub(/#.*/, "", $2); gsub(/ /, "", $2); print $2}' "$HERE/configs/$model.toml")
  for precision in fp32 bf16; do train "$model" 1 "$cores" "$precision"; done
  if [ "$sweep" = 1 ]; then
    for ((r = 1; r <= cores; r *= 2)); do
      [ $((cores % r)) = 0 ] && [ $((batch % r)) = 0 ] || continue
      train "$model" "$r" $((cores / r)) fp32 "dp=$r,mb=$((batch / r))"
    done
  fi
  if [ "$plan" = 1 ] && [ -n "$mpirun" ]; then
    launch "$cores" "$ff" calibrate --out "$work/cluster.toml" --threads 1 --sweeps 1 >"$work/calibrate.log" 2>&1 ||
      die "calibrate failed: $work/calibrate.log"
    pick=$("$ff" plan --config "$HERE/configs/$model.toml" --cluster "$work/cluster.toml" --vocab-size 4096 \
      --global-batch "$batch" 2>/dev/null | sed -n 's/^run #1: //p')
    picks+=("$model: plan's pick on $cores cores: $pick")
  fi
done
echo "kernels: $kernels" >&2
echo
echo "| model | ranks x threads | precision | tokens/s |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
[ ${#picks[@]} = 0 ] || { echo; printf '%s\n' "${picks[@]}"; }
