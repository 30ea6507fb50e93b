# Sourced by a portable pack's run.sh (scripts/portable_run.sh, beside which the pack keeps this
# file) and by bench/serial/bf16_on_host.sh: the one rule for the pack's C++ runtime.
#
# pack_cxx_first TOP BINARY LIBS prints LIBS (a library path) with TOP/lib-cxx in front where the
# host's libstdc++ / libgcc_s is missing or older than BINARY needs, else LIBS unchanged: a newer
# host runtime must win, since the host's own libraries (an Open MPI's libmpi_cxx) may need
# versions the pack's lacks. Packs made before lib-cxx/ kept the runtime in lib/: no change then.
pack_cxx_first() {
  if [ -d "$1/lib-cxx" ] && LD_LIBRARY_PATH="$3" ldd "$2" 2>&1 | grep "not found" |
    grep -qE 'libstdc\+\+|libgcc_s|GLIBCXX|CXXABI|GCC_'; then
    echo "$1/lib-cxx:$3"
  else
    echo "$3"
  fi
}
