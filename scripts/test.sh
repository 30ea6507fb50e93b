#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, oracle against PyTorch, end to end).
#
# scripts/test.sh --sanitize: an AddressSanitizer + UndefinedBehaviorSanitizer build in
# build-asan/ of only what the unit, io, checkpoint, kernel, fuzz and CLI tests need; runs those
# tests and a 2-rank `train` under dp, tp and pp. Any report fails it (halt_on_error): nothing is suppressed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--sanitize" ]; then
  shift
  t0=$(date +%s)
  jobs=${FIVEFOLD_JOBS:-2}
  # -O0: instrumented code compiles in half the time of -O1 (4.5 against 8.6 minutes on a 2-core
  # Zen 3, session 12) and the tests run in about 110 s instead of 35, so the whole check is ~2.5
  # minutes shorter; nothing is optimised away before the sanitizers see it. -g1 (line tables only)
  # keeps the reports' file:line frames at a fifth less compile time than -g; -march=native stays
  # (the default) so the SIMD paths checked are the ones that run. The libraries build as unity
  # batches (half the CPU time: each batch parses the shared headers once); the tests never do
  # (tests/CMakeLists.txt says why).
  flags="-O0 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
  tests=(test_core test_kernels test_io test_ckpt test_fuzz test_cli)
  cmake --build build-asan -j "$jobs" --target fivefold "${tests[@]}" 2>&1 | grep -E "error|warning" || true
  t_built=$(date +%s)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export OMP_NUM_THREADS=2
  # Every fivefold process starts MPI, and Open MPI (and hwloc, and its unloaded plugins) keep
  # allocations past exit that LeakSanitizer reports with no frame of ours; leak checking is off
  # for those processes only. The library tests above them keep it on.
  no_leaks=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}
  status=0 passed=0 failed=0
  for t in "${tests[@]}"; do
    exe=$(find build-asan/tests -name "$t" -type f -perm -u+x | head -n 1)
    echo "== $t"
    ok=1
    if [ "$t" = test_cli ]; then
      ASAN_OPTIONS=$no_leaks "$exe" --gtest_brief=1 "$@" || ok=0
    else
      "$exe" --gtest_brief=1 "$@" || ok=0
    fi
    if [ $ok = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)) status=1; fi
  done
  echo "== 2-rank train under dp, tp + sp, pp"
  run=$(mktemp -d)
  python3 -c "
import random
random.seed(1)
words = 'and the lord said unto moses behold land of egypt children israel went out into'.split()
print('\n'.join(' '.join(random.choice(words) for _ in range(12)) for _ in range(600)))" >"$run/text.txt"
  ASAN_OPTIONS=$no_leaks build-asan/fivefold prepare --text "$run/text.txt" --one-doc-per-line --vocab 300 --out "$run/data" \
    >/dev/null || status=1
  # Two ranks under data, tensor (+ sequence) and pipeline parallelism: every exit path of the
  # communication layer (groups made and freed) runs under the sanitizers.
  n=0
  for layout in "--dp 2 --zero 3" "--tp 2 --sp true" "--pp 2 --schedule zb-h1 --n-layers 4 --grad-accum 2"; do
    n=$((n + 1))
    # shellcheck disable=SC2086  # the layout is several flags
    if ASAN_OPTIONS=$no_leaks OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -np 2 -x ASAN_OPTIONS -x UBSAN_OPTIONS -x OMP_NUM_THREADS \
      build-asan/fivefold train --config configs/tiny.toml --data "$run/data" --out "$run/out$n" \
      --steps 4 --eval-every 2 --threads 1 --log-every 2 $layout; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1)) status=1
    fi
  done
  rm -rf "$run"
  t_end=$(date +%s)
  echo "sanitize: build $((t_built - t0)) s, tests and runs $((t_end - t_built)) s"
  echo "sanitize: $passed passed, $failed failed"
  exit $status
fi

bash scripts/setup.sh
cd build
# Two at a time: 2.2 minutes instead of 3.2 on 2 cores (the MPI tests idle in waits, not spin).
ctest --output-on-failure --timeout 600 -j "$(nproc)" "$@"
