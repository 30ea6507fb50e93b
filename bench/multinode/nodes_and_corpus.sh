# Sourced by the two-build benches (before_after.sh, layout_before_after.sh): two namespaced nodes
# over a $rate link, a work folder removed on exit, and $data: the given corpus, or the KJV
# prepared by $new (vocab 4096). Needs root; set: new, rate, data (empty for the KJV).
H=tests/support/netns_nodes.sh
export FF_NODES_OWNER=$$ OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$H" check
work=$(mktemp -d)
trap '"$H" down; rm -rf "$work"' EXIT
if [ -z "$data" ]; then
  bible -f Gen1:1-Rev22:21 >"$work/kjv.txt"
  "$new" prepare --text "$work/kjv.txt" --one-doc-per-line --vocab 4096 --out "$work/kjv" >/dev/null
  data=$work/kjv
fi
"$H" up 2 "$rate" >/dev/null
