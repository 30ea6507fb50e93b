#!/usr/bin/env bash
# Carries fivefold's benchmarks to another x86-64 host that has no package registry: a tarball of
# the binary built for a portable ISA level, the shared libraries it needs (every one but glibc's),
# the model configs, a prepared corpus, and run.sh, which unpacks nowhere but its own folder.
#
#   scripts/portable_bench.sh build [LEVEL...]   configure + build build-portable-LEVEL/ (default
#                                                x86-64-v3: AVX2 + FMA, Zen 3 and Haswell on; the
#                                                binary's own kernels (attention, element-wise)
#                                                switch to their AVX-512 and AVX512-BF16 tiers
#                                                at run time where the CPU has them, as oneDNN picks AMX or
#                                                AVX512-BF16 for its GEMMs). x86-64-v4-bf16
#                                                (x86-64-v4 plus AVX512-BF16) and x86-64-v4 compile
#                                                everything for those CPUs.
#   scripts/portable_bench.sh pack OUT.tar.gz [--binary PATH:LEVEL]... [--data DIR] [--no-mpi]
#                                                the tarball (default binaries: the build folders
#                                                above that exist); --no-mpi leaves the bundled
#                                                Open MPI out (the host must have its own)
#   scripts/portable_bench.sh all OUT.tar.gz     build, then pack
#   scripts/portable_bench.sh bench-at COMMIT DIR [TARGET]
#                                                TARGET (default bench_gemm_amx) of an earlier
#                                                commit, built for x86-64-v3, as DIR/TARGET.<commit>
#   scripts/portable_bench.sh pack-perf OUT.tar.gz
#                                                this machine's perf, readelf and objdump with their
#                                                libraries under perf/ and perf/lib/, for
#                                                bench/serial/bf16_on_host.sh --perf on a host without them
#
# On the other host: tar xf OUT.tar.gz && fivefold-portable/run.sh [--steps 10] (run.sh --help).
# run.sh needs bash, coreutils, awk and sed; glibc at least the build machine's (run.sh checks).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
JOBS=${FIVEFOLD_JOBS:-2}

march_flags() {
  case "$1" in
    x86-64-v4-bf16) echo "-march=x86-64-v4 -mavx512bf16" ;;
    x86-64-v3 | x86-64-v4) echo "-march=$1" ;;
    *) echo "unknown ISA level '$1': x86-64-v4-bf16, x86-64-v4 or x86-64-v3" >&2; exit 2 ;;
  esac
}

# Configures SOURCE's build folder BUILD for an ISA level.
configure() {
  local source=$1 build=$2 flags
  flags=$(march_flags "$3")
  # --as-needed drops libmpi_cxx (fivefold calls MPI's C interface only), which Open MPI 5 hosts lack.
  cmake -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFIVEFOLD_NATIVE=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-Wl,--as-needed" \
    ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
}

build() {
  local levels=("$@")
  [ ${#levels[@]} -gt 0 ] || levels=(x86-64-v3)
  for level in "${levels[@]}"; do
    configure "$ROOT" "$ROOT/build-portable-$level" "$level"
    cmake --build "$ROOT/build-portable-$level" -j "$JOBS" --target fivefold
  done
}

# A benchmark of an earlier commit, built for x86-64-v3 in a throwaway worktree and copied to
# DIR/TARGET.<short commit>, to be timed beside this build's (bf16_on_host.sh --gemm-benches DIR
# runs every bench_gemm_amx.NAME there after bench_gemm_amx).
bench_at() {
  local commit=${1:?bench-at COMMIT DIR [TARGET]} dir=${2:?bench-at COMMIT DIR [TARGET]} target=${3:-bench_gemm_amx}
  local short wt
  short=$(git -C "$ROOT" rev-parse --short "$commit^{commit}") || exit 2
  wt=$(mktemp -d)
  git -C "$ROOT" worktree add -q --detach "$wt/src" "$short"
  configure "$wt/src" "$wt/build" x86-64-v3
  cmake --build "$wt/build" -j "$JOBS" --target "$target" >/dev/null || { echo "bench-at: $target did not build at $short" >&2; exit 1; }
  mkdir -p "$dir"
  cp "$(find "$wt/build" -name "$target" -type f -perm -u+x | head -1)" "$dir/$target.$short"
  git -C "$ROOT" worktree remove --force "$wt/src"
  rm -rf "$wt"
  echo "built $dir/$target.$short"
}

# glibc's own libraries stay the host's: they must match its loader.
is_glibc() {
  case "$(basename "$1")" in
    ld-linux*.so* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | libresolv.so* | libutil.so*) return 0 ;;
  esac
  return 1
}

is_mpi_lib() {
  case "$(basename "$1")" in
    libmpi*.so* | libopen-rte.so* | libopen-pal.so* | libpmix.so* | libprrte.so* | libhwloc.so* | libevent*.so*) return 0 ;;
  esac
  return 1
}

# Every non-glibc library `ldd` resolves for the given files, one path a line.
needed_libs() {
  ldd "$@" 2>/dev/null | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
    is_glibc "$lib" || echo "$lib"
  done
}

pack() {
  local out="" data="$ROOT/data/kjv" with_mpi=1
  local binaries=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --binary) binaries+=("$2"); shift 2 ;;
      --data) data="$2"; shift 2 ;;
      --no-mpi) with_mpi=0; shift ;;
      -*) echo "pack: unknown option $1" >&2; exit 2 ;;
      *) out="$1"; shift ;;
    esac
  done
  [ -n "$out" ] || { echo "pack: name the tarball (pack OUT.tar.gz)" >&2; exit 2; }
  if [ ${#binaries[@]} -eq 0 ]; then
    for dir in "$ROOT"/build-portable-*/; do
      [ -x "$dir/fivefold" ] && binaries+=("$dir/fivefold:$(basename "$dir" | sed 's/^build-portable-//')")
    done
  fi
  [ ${#binaries[@]} -gt 0 ] || { echo "pack: no binary: run '$0 build' first or pass --binary PATH:LEVEL" >&2; exit 2; }
  [ -f "$data/meta.json" ] || { echo "pack: no prepared corpus at $data (scripts/demo.sh prepares data/kjv; or --data DIR)" >&2; exit 2; }
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  local top="$stage/fivefold-portable"
  mkdir -p "$top/bin" "$top/lib" "$top/lib-mpi" "$top/configs" "$top/data"
  local paths=()
  for b in "${binaries[@]}"; do
    cp "${b%%:*}" "$top/bin/fivefold.${b##*:}"
    paths+=("${b%%:*}")
  done
  for lib in $(needed_libs "${paths[@]}"); do
    if is_mpi_lib "$lib"; then cp -L "$lib" "$top/lib-mpi/"; else cp -L "$lib" "$top/lib/"; fi
  done
  if [ "$with_mpi" = 1 ]; then bundle_open_mpi "$top"; fi
  # The C++ runtime apart: run.sh takes it only where the host's is missing or older than the
  # build's (portable_cxx.sh).
  mkdir -p "$top/lib-cxx"
  for f in libstdc++.so.6 libgcc_s.so.1; do
    if [ -e "$top/lib/$f" ]; then mv "$top/lib/$f" "$top/lib-cxx/"; fi
  done
  cp "$ROOT"/configs/bench.toml "$ROOT"/configs/small.toml "$ROOT"/configs/tiny.toml "$top/configs/"
  mkdir -p "$top/data/corpus"
  cp -rL "$data"/. "$top/data/corpus/"
  ldd --version | awk 'NR == 1 {print $NF}' >"$top/GLIBC_BUILT_WITH"
  cp "$ROOT/scripts/portable_run.sh" "$top/run.sh"
  cp "$ROOT/scripts/portable_cxx.sh" "$top/portable_cxx.sh"
  chmod +x "$top/run.sh"
  # FIVEFOLD_PACK_GZIP=1: the fastest compression (tests), 6 by default.
  tar -C "$stage" -cf - fivefold-portable | gzip -"${FIVEFOLD_PACK_GZIP:-6}" >"$out"
  echo "packed $(du -h "$out" | cut -f1) into $out: $(ls "$top/bin" | tr '\n' ' ')"
}

# Open MPI as Debian installs it (mpirun, its plugins, help texts), relocated under mpi/ and found
# there through OPAL_PREFIX, with the libraries its plugins load: for hosts without an mpirun.
bundle_open_mpi() {
  local top="$1" mpirun
  mpirun=$(command -v mpirun) || { echo "pack: no mpirun here to bundle (--no-mpi)" >&2; return 0; }
  local prefix libdir pkglibdir datadir
  prefix=$(ompi_info --path prefix --parsable 2>/dev/null | sed -n 's/^path:prefix://p')
  libdir=$(ompi_info --path libdir --parsable 2>/dev/null | sed -n 's/^path:libdir://p')
  pkglibdir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
  datadir=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')
  [ -n "$prefix" ] && [ -d "$pkglibdir" ] || { echo "pack: ompi_info names no plugin folder: Open MPI left out" >&2; return 0; }
  local m="$top/mpi"
  mkdir -p "$m/bin" "$m/${pkglibdir#"$prefix"/}" "$m/${libdir#"$prefix"/}" "$m/${datadir#"$prefix"/}"
  for tool in mpirun orterun orted; do
    [ -e "$(dirname "$mpirun")/$tool" ] && cp -L "$(dirname "$mpirun")/$tool" "$m/bin/"
  done
  cp -L "$pkglibdir"/*.so "$m/${pkglibdir#"$prefix"/}/"
  cp -rL "$datadir"/. "$m/${datadir#"$prefix"/}/"
  for lib in $(needed_libs "$m"/bin/* "$m/${pkglibdir#"$prefix"/}"/*.so); do
    if is_mpi_lib "$lib"; then cp -nL "$lib" "$top/lib-mpi/"; else cp -nL "$lib" "$top/lib/"; fi
  done
  echo "${pkglibdir#"$prefix"/}" >"$m/PLUGIN_DIR"
}

# perf and the binutils bf16_profile.py calls, with every non-glibc library they load.
pack_perf() {
  local out=${1:?pack-perf OUT.tar.gz}
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/perf/lib"
  for tool in perf readelf objdump; do
    cp -L "$(command -v "$tool")" "$stage/perf/" || { echo "pack-perf: no $tool here (Debian: linux-perf, binutils)" >&2; exit 1; }
  done
  needed_libs "$stage"/perf/perf "$stage"/perf/readelf "$stage"/perf/objdump | xargs -r -I{} cp -L {} "$stage/perf/lib/"
  tar -C "$stage" -czf "$out" perf
  rm -rf "$stage"
  echo "packed $(du -h "$out" | cut -f1) into $out"
}

cmd=${1:-}
shift || true
case "$cmd" in
  build) build "$@" ;;
  pack) pack "$@" ;;
  all) out=${1:?all OUT.tar.gz}; shift; build; pack "$out" "$@" ;;
  pack-perf) pack_perf "$@" ;;
  bench-at) bench_at "$@" ;;
  *) sed -n '2,/^set -euo pipefail/{/^set/!p}' "$0"; exit 2 ;;
esac
