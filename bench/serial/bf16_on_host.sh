#!/usr/bin/env bash
# bf16 speed on another x86-64 host (an AMX Xeon, say), from the pack scripts/portable_bench.sh
# makes: nothing installed, everything under a temporary folder and OUTDIR.
#
#   bench/serial/bf16_on_host.sh PACK.tar.gz OUTDIR [--perf PERF.tar.gz] [--python python3]
#                                [--rounds 3] [--steps 8] [--many-threads N] [--budget SECONDS]
#                                [--tests TEST_KERNELS] [--no-profile-fp32] [--no-peer]
#                                [--variant 'NAME=ARGS']... [--loss-steps N] [--gemm-benches DIR]
#                                [--many-rounds 1] [--profile-variants]
#
# 1. The CPU (lscpu, its AMX / AVX512-BF16 flags) and the ISA oneDNN dispatches fivefold's GEMMs to
#    (ONEDNN_VERBOSE over one bf16 step); with --tests, the bf16 attention tests of a test_kernels
#    binary built beside the pack's (on an AMX CPU they run the tile products on AMX).
# 2. bench/serial/bf16_speed.py on the `bench` model, 2 threads pinned to two physical cores:
#    fivefold fp32 and bf16 against the host's PyTorch bf16 autocast, eager as 1.13 runs it and
#    with SDPA and fused AdamW (torch 2.x), alternating round after round; bf16 variants
#    (--variant, bf16_speed.py's: more train arguments and environment), by default on an AMX CPU
#    the attention's tile products on the vector units (FIVEFOLD_AMX=off) and the GEMMs on
#    oneDNN's instead of fivefold's tile GEMM (FIVEFOLD_AMX_GEMM=off).
# 2b. With --loss-steps N: N bf16 steps on every core by default, with the attention on the vector
#    units and with oneDNN's GEMMs, their losses and gradient norms side by side (the tile unit
#    must not move training).
# 2c. With --gemm-benches DIR (a portable build's bench/gemm: bench_gemm_bf16, bench_wgrad_rows,
#    bench_gemm_amx), the bf16 GEMMs of the `bench` shapes at 2 pinned threads: plain, packed, the
#    weight gradients as one matmul against rows dealt out to the threads, and oneDNN against
#    fivefold's tile GEMM with the tile unit's peak (and against another build's tile GEMM, where
#    DIR also holds one as bench_gemm_amx.NAME); with bench_tile_pack there, the tile GEMM's
#    packing in its packing order against column order, on one thread.
# 3. Where perf runs (PERF.tar.gz: perf, readelf and objdump with their libraries under perf/ and
#    perf/lib/; the host's own readelf and objdump are used where it has them and the pack not),
#    bench/serial/bf16_profile.py's kernel-by-kernel profile of a bf16 and an fp32 step; with
#    --profile-variants, of a bf16 step under each variant's environment too (its VAR=VALUE words).
# 4. The same comparison (variants included) at --many-threads (default: every core), unpinned,
#    --many-rounds alternating rounds.
# Each stage writes OUTDIR/<stage>.txt as it ends; a stage that would start past --budget seconds
# is skipped (a device lease ends the command, and what is written still comes back).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
pack=${1:?usage: bf16_on_host.sh PACK.tar.gz OUTDIR [options]}
out=${2:?usage: bf16_on_host.sh PACK.tar.gz OUTDIR [options]}
shift 2
perf_pack="" py=python3 rounds=3 steps=8 many=$(nproc) budget=600 tests="" precisions="bf16 fp32"
no_peer="" loss_steps=0 variants=() gemm_benches="" many_rounds=1 profile_variants=""
while [ $# -gt 0 ]; do
  case "$1" in
    --perf) perf_pack=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --many-threads) many=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --no-profile-fp32) precisions="bf16"; shift ;;
    --no-peer) no_peer=--no-peer; shift ;;
    --variant) variants+=(--variant "$2"); shift 2 ;;
    --loss-steps) loss_steps=$2; shift 2 ;;
    --gemm-benches) gemm_benches=$2; shift 2 ;;
    --many-rounds) many_rounds=$2; shift 2 ;;
    --profile-variants) profile_variants=1; shift ;;
    *) echo "bf16_on_host.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
in_budget() { [ $((SECONDS - start)) -lt "$budget" ] || { echo "skipped (past ${budget}s): $1" | tee -a "$out/skipped.txt"; return 1; }; }

tar -C "$work" -xzf "$pack"
top="$work/fivefold-portable"
bin=$(ls "$top"/bin/fivefold.* | head -1)
# The pack's Open MPI libraries (these serial runs need no mpirun of the host's), and its C++
# runtime only where the host's is missing or too old (run.sh's rule).
. "$ROOT/scripts/portable_cxx.sh"
libs=$(pack_cxx_first "$top" "$bin" "$top/lib:$top/lib-mpi")
# fivefold through a wrapper that gives it the pack's libraries and no one else's.
cat >"$work/fivefold" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$libs" exec "$bin" "\$@"
EOF
chmod +x "$work/fivefold"
data="$top/data/corpus"

if [ -n "$perf_pack" ]; then
  tar -C "$work" -xzf "$perf_pack"
  mkdir -p "$work/perfbin"
  # perf, and readelf and objdump where the pack has them (the profile reads symbols and annotates).
  for tool in perf readelf objdump; do
    [ -x "$work/perf/$tool" ] || continue
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$work/perf/lib" "$work/perf/$tool" >"$work/perfbin/$tool"
    chmod +x "$work/perfbin/$tool"
  done
  export PATH="$work/perfbin:$PATH"
fi

# Two physical cores: the first logical CPU of each of the first two cores.
pair=$(lscpu -p=CPU,CORE 2>/dev/null | grep -v '^#' | sort -t, -k2,2n -k1,1n | awk -F, '!seen[$2]++ {print $1}' | head -2 | paste -sd,)
pin() { if [ -n "$pair" ] && command -v taskset >/dev/null; then taskset -c "$pair" "$@"; else "$@"; fi; }

{
  echo "date: $(date -u +%FT%TZ)  elapsed: $((SECONDS - start)) s"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L2|L3|CPU family|Model:)'
  echo "ISA flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(amx|avx512_bf16|avx512f$|avx512_fp16|avx_vnni)' | paste -sd' ')"
  echo "pinned pair: ${pair:-none} (taskset: $(command -v taskset || echo missing))"
  echo "binary: $bin"
  echo "torch: $($py -c 'import torch; print(torch.__version__, torch.backends.mkldnn.is_available())' 2>&1)"
  command -v perf >/dev/null && { perf --version; perf stat -e cpu-clock -- true 2>&1 | grep -c cpu-clock | sed 's/^/perf cpu-clock works: /'; }
  uptime
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

# oneDNN's dispatch: the ISA each kind of primitive ran on during one bf16 step, its GEMMs included
# (FIVEFOLD_AMX_GEMM=off: on an AMX CPU fivefold's tile GEMM would take them).
"$work/fivefold" train --config "$ROOT/configs/bench.toml" --data "$data" --out "$work/verbose" --steps 1 \
  --eval-every 0 --threads 2 --precision bf16 >"$work/verbose.log" 2>&1 </dev/null
sed -n '1,20p' "$work/verbose.log" >"$out/onednn.txt"
FIVEFOLD_AMX_GEMM=off ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$work/fivefold" train --config "$ROOT/configs/bench.toml" \
  --data "$data" --out "$work/verbose2" --steps 1 --eval-every 0 --threads 2 --precision bf16 2>&1 </dev/null |
  grep -E 'onednn_verbose|dnnl_verbose' >"$work/dnnl.log"
{ grep -m3 -E 'info,(cpu|prim_template)|,cpu,(runtime|isa)' "$work/dnnl.log"
  echo "primitives by implementation (exec lines):"
  grep ',exec,' "$work/dnnl.log" | awk -F, '{print $4, $5, $6}' | sort | uniq -c | sort -rn | head -12
} >>"$out/onednn.txt"
cat "$out/onednn.txt"

if [ -n "$tests" ]; then
  LD_LIBRARY_PATH="$libs" OMP_NUM_THREADS=2 "$tests" \
    --gtest_filter='FlashAttentionBf16.*:AttentionDocuments.*:AttentionTiles.*:AmxTile*:GemmTiles.*:GemmOnTiles.*' >"$out/tests.txt" 2>&1
  echo "tests exit $?" >>"$out/tests.txt"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |AMX against|exit' "$out/tests.txt"
fi

[ ${#variants[@]} -eq 0 ] && grep -q 'amx_bf16' /proc/cpuinfo &&
  variants=(--variant "attention tiles on the vector units=FIVEFOLD_AMX=off"
            --variant "oneDNN GEMMs=FIVEFOLD_AMX_GEMM=off")
peers=(--peer "PyTorch bf16 autocast=--autocast-bf16")
# SDPA and a fused CPU AdamW exist from torch 2.4 on.
$py -c 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null &&
  peers+=(--peer "PyTorch bf16 autocast, SDPA, fused AdamW=--autocast-bf16 --sdpa --adamw fused")
if in_budget "2-thread speed"; then
  pin python3 "$ROOT/bench/serial/bf16_speed.py" --fivefold "$work/fivefold" \
    --data "$data" --rounds "$rounds" --steps "$steps" --warmup 2 --threads 2 --peer-python "$py" "${peers[@]}" "${variants[@]}" $no_peer \
    >"$out/speed2.txt" 2>&1
  cat "$out/speed2.txt"
fi

if [ "$loss_steps" -gt 0 ] && ! grep -q 'amx_bf16' /proc/cpuinfo; then
  echo "loss check skipped: no AMX on this CPU, so both runs would take the vector units" | tee "$out/loss_check.txt"
elif [ "$loss_steps" -gt 0 ] && in_budget "loss check"; then
  # The default (attention tiles on AMX, fivefold's tile GEMM), the attention on the vector units,
  # and the GEMMs on oneDNN's: each of the last two against the default.
  for run in "default=" "attention on the vector units=FIVEFOLD_AMX=off" "oneDNN GEMMs=FIVEFOLD_AMX_GEMM=off"; do
    name=${run%%=*} env_words=${run#*=}
    env $env_words "$work/fivefold" train --config "$ROOT/configs/bench.toml" --data "$data" --out "$work/loss-${name// /_}" \
      --steps "$loss_steps" --eval-every 0 --threads "$many" --precision bf16 --log-every 1000 >/dev/null 2>&1 </dev/null
  done
  python3 - "$work/loss-default/metrics.jsonl" "$work/loss-attention_on_the_vector_units/metrics.jsonl" \
    "$work/loss-oneDNN_GEMMs/metrics.jsonl" >"$out/loss_check.txt" 2>&1 <<'PY'
import json, sys
base, *others = [[json.loads(l) for l in open(p) if '"loss"' in l] for p in sys.argv[1:]]
for name, run in zip(("attention on the vector units", "oneDNN's GEMMs (FIVEFOLD_AMX_GEMM=off)"), others):
    dl = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(run, base))
    dg = max(abs(a["grad_norm"] - b["grad_norm"]) / b["grad_norm"] for a, b in zip(run, base))
    print(f"{len(run)} bf16 steps, {name} against the default: worst relative loss difference {dl:.2e}, "
          f"gradient norm {dg:.2e}; last loss {run[-1]['loss']:.5f} against {base[-1]['loss']:.5f}")
    for s in (0, len(run) // 4, len(run) // 2, 3 * len(run) // 4, len(run) - 1):
        print(f"  step {run[s]['step']}: loss {run[s]['loss']:.5f} / {base[s]['loss']:.5f}, "
              f"grad norm {run[s]['grad_norm']:.5f} / {base[s]['grad_norm']:.5f}")
PY
  cat "$out/loss_check.txt"
fi

if [ -n "$gemm_benches" ] && in_budget "GEMM benches"; then
  # bench_gemm_amx.NAME: another build's tile GEMM, run after this one's. The plain, packed and
  # split-row products are oneDNN's paths: FIVEFOLD_AMX_GEMM=off keeps the tile GEMM out of them.
  others=$(cd "$gemm_benches" && ls -d bench_gemm_amx.* 2>/dev/null)
  for b in bench_gemm_bf16 bench_wgrad_rows bench_tile_pack bench_gemm_amx $others; do
    [ -x "$gemm_benches/$b" ] && echo "== $b" &&
      LD_LIBRARY_PATH="$libs" OMP_NUM_THREADS=2 FIVEFOLD_AMX_GEMM=off pin "$gemm_benches/$b" 2
  done >"$out/gemm.txt" 2>&1
  cat "$out/gemm.txt"
fi

if [ -n "$perf_pack" ]; then
  for p in $precisions; do
    in_budget "profile $p" || break
    pin python3 "$ROOT/bench/serial/bf16_profile.py" --fivefold "$work/fivefold" --data "$data" \
      --steps 6 --warmup 2 --threads 2 --precision "$p" --symbols "$bin" --save "$out/profile_$p.json" >"$out/profile_$p.txt" 2>&1
    tail -30 "$out/profile_$p.txt"
  done
  # Each variant's environment words (NAME=VAR=VALUE ...; train arguments are left out) over a bf16 step.
  for ((v = 1; v < ${#variants[@]}; v += 2)); do
    [ -n "$profile_variants" ] || break
    name=${variants[v]%%=*} env_words=$(printf '%s\n' ${variants[v]#*=} | grep -E '^[A-Z_][A-Z0-9_]*=' | paste -sd' ')
    [ -n "$env_words" ] && in_budget "profile bf16, $name" || continue
    file="profile_bf16_${name//[^A-Za-z0-9]/_}"
    (export $env_words && pin python3 "$ROOT/bench/serial/bf16_profile.py" --fivefold "$work/fivefold" --data "$data" \
      --steps 6 --warmup 2 --threads 2 --precision bf16 --symbols "$bin" --save "$out/$file.json" \
      >"$out/$file.txt" 2>&1)
    echo "== bf16 profile, $name ($env_words)"
    tail -30 "$out/$file.txt"
  done
fi

if in_budget "$many-thread speed"; then
  python3 "$ROOT/bench/serial/bf16_speed.py" --fivefold "$work/fivefold" --data "$data" --rounds "$many_rounds" \
    --steps "$steps" --warmup 2 --threads "$many" --peer-python "$py" "${peers[@]}" "${variants[@]}" $no_peer \
    >"$out/speed_unpinned$many.txt" 2>&1
  cat "$out/speed_unpinned$many.txt"
fi
echo "done in $((SECONDS - start)) s"
