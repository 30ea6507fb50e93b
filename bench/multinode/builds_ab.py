#!/usr/bin/python3
"""Two fivefold builds side by side across two namespaced nodes x 2 ranks: the step time of the
same layouts at each link rate, builds alternating within every round (their order flipped each
round), medians over rounds. For a change in Comm or the trainer, build the commit before it into
another folder and compare:

  git worktree add /tmp/before COMMIT && cmake -S /tmp/before -B /tmp/before/build -DCMAKE_BUILD_TYPE=Release \\
      && cmake --build /tmp/before/build -j2 --target fivefold
  /usr/bin/python3 bench/multinode/builds_ab.py --a /tmp/before/build/fivefold --b build-dev/fivefold \\
      --data DIR [--rates 1gbit,10gbit] [--rounds 2] [--steps 8]      # as root

Layouts: dp 4, dp 4 ZeRO-3, tp 2 inside x dp 2 across (configs/small.toml, 16 sequences a step)."""
import argparse
import os
import statistics
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as nodes  # noqa: E402  (the two-node helpers of bench/multinode/run.py)

LAYOUTS = nodes.LAYOUTS[:3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the first build's fivefold (e.g. the commit before)")
    ap.add_argument("--b", required=True, help="the second build's fivefold")
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", default="configs/small.toml")
    ap.add_argument("--rates", default="1gbit,10gbit")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    builds = [("a", a.a), ("b", a.b)]
    rates = a.rates.split(",")
    seconds = {}
    print("load at the start", " ".join(open("/proc/loadavg").read().split()[:3]), flush=True)
    nodes.harness("check")
    try:
        nodes.harness("up", "2", rates[0])
        for rate in rates:
            nodes.harness("rate", rate)
            for r in range(a.rounds):
                for label, layout in LAYOUTS:
                    for name, exe in (builds if r % 2 == 0 else builds[::-1]):
                        run = types.SimpleNamespace(fivefold=exe, config=a.config, data=a.data, steps=a.steps)
                        t = nodes.train_step_seconds(nodes.on_nodes, run, layout, "ab")
                        seconds.setdefault((rate, label, name), []).append(t)
                        print(rate, label, name, f"{t * 1000:.1f} ms", flush=True)
    finally:
        nodes.harness("down")
    print("load at the end", " ".join(open("/proc/loadavg").read().split()[:3]))
    print("\n| link | layout | a: step (ms) | b: step (ms) | b's speed-up |\n|---|---|---|---|---|")
    for rate in rates:
        for label, _ in LAYOUTS:
            ta, tb = (statistics.median(seconds[(rate, label, n)]) for n in ("a", "b"))
            print(f"| {rate} | {label} | {ta * 1000:.0f} | {tb * 1000:.0f} | {ta / tb:.2f}x |")


if __name__ == "__main__":
    main()
