# Sourced by the shell tests of whole training jobs: a scratch folder with a log, fail(), and a
# small generated corpus (verse-like lines over a few words) prepared into $out/data.
# Needs $fivefold; sets $out and $log; logged_steps FILE prints a metrics.jsonl's steps.
# $out is removed on exit, unless FIVEFOLD_KEEP_TEST_DIRS=1 or fail() ran (then kept, and named).
# A test that sets an EXIT trap of its own removes $out there.
out=$(mktemp -d)
log=$out/log.txt
keep_out=${FIVEFOLD_KEEP_TEST_DIRS:-}
trap 'if [ "$keep_out" = 1 ]; then echo "kept $out"; else rm -rf "$out"; fi' EXIT
fail() {
  echo "FAIL: $1"
  cat "$log"
  keep_out=1
  exit 1
}
awk 'BEGIN { srand(7); split("and the lord said unto moses in land of his sons people shall go", w, " ");
             for (i = 0; i < 3000; i++) { line = "And"; for (j = 0; j < 8; j++) line = line " " w[int(rand() * 17) + 1];
                                          print line "." } }' >"$out/corpus.txt"
"$fivefold" prepare --text "$out/corpus.txt" --one-doc-per-line --vocab 300 --out "$out/data" >"$log" 2>&1 || fail "prepare failed"
# Step, loss and gradient norm of every step a metrics.jsonl logged, at full precision (one a line,
# for diff).
logged_steps() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "step" in r and "loss" in r:
        print(r["step"], repr(r["loss"]), repr(r["grad_norm"]))' "$1"
}
