#!/usr/bin/python3
"""Training quality by precision: reads the metrics.jsonl of runs trained with
precision = fp32, bf16, fp16 (same config, seed and data), prints a Markdown table of the final
validation losses against fp32 and writes an SVG of the training-loss curves (hand-made SVG: no
plotting library needed).

usage: /usr/bin/python3 bench/serial/precision_quality.py RUNS_DIR OUT_SVG
  RUNS_DIR holds one folder per precision (fp32, bf16, fp16, ...), each a `fivefold train --out`.
"""
import json
import os
import sys

COLORS = {"fp32": "#222222", "bf16": "#1f77b4", "fp16": "#d62728", "fp8": "#2ca02c"}


def read(run):
    with open(os.path.join(run, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def svg(curves, path, w=640, h=360, pad=48):
    steps = [r["step"] for recs in curves.values() for r in recs]
    losses = [r["loss"] for recs in curves.values() for r in recs]
    x0, x1, y0, y1 = min(steps), max(steps), min(losses), max(losses)
    sx = lambda s: pad + (s - x0) / max(1, x1 - x0) * (w - 2 * pad)
    sy = lambda v: h - pad - (v - y0) / max(1e-9, y1 - y0) * (h - 2 * pad)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
           f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">step</text>',
           f'<text x="14" y="{h / 2}" transform="rotate(-90 14 {h / 2})" text-anchor="middle">training loss</text>']
    for i in range(5):
        v = y0 + (y1 - y0) * i / 4
        out.append(f'<text x="{pad - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        s = x0 + (x1 - x0) * i / 4
        out.append(f'<text x="{sx(s):.1f}" y="{h - pad + 16}" text-anchor="middle">{s:.0f}</text>')
    for k, (name, recs) in enumerate(curves.items()):
        pts = " ".join(f"{sx(r['step']):.1f},{sy(r['loss']):.1f}" for r in recs)
        color = COLORS.get(name, "#888888")
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{pts}"/>')
        out.append(f'<text x="{w - pad - 60}" y="{pad + 16 * k}" fill="{color}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs_dir, out_svg = sys.argv[1], sys.argv[2]
    curves = {p: read(os.path.join(runs_dir, p)) for p in ("fp32", "bf16", "fp16", "fp8")
              if os.path.exists(os.path.join(runs_dir, p, "metrics.jsonl"))}
    # A run still going (or not yet evaluated) is left out rather than reported short.
    curves = {p: recs for p, recs in curves.items() if any("val_loss" in r for r in recs)}
    fp32_val = {r["step"]: r["val_loss"] for r in curves["fp32"] if "val_loss" in r}
    print("| precision | steps | final val loss | vs fp32 (same step) | final train loss | skipped steps (fp16) | final loss scale |")
    print("|---|---|---|---|---|---|---|")
    for name, recs in curves.items():
        last_val = [r for r in recs if "val_loss" in r][-1]
        # A run stopped early (fp8 is slow: scalar quantisation) is compared at its last evaluation.
        ref = {"val_loss": fp32_val.get(last_val["step"], float("nan"))}
        skipped = sum(1 for r in recs if r.get("skipped"))
        scale = recs[-1].get("loss_scale", "")
        delta = (last_val["val_loss"] - ref["val_loss"]) / ref["val_loss"]
        print(f"| {name} | {last_val['step']} | {last_val['val_loss']:.4f} | {100 * delta:+.2f}% | "
              f"{recs[-1]['loss']:.4f} | {skipped if 'loss_scale' in recs[-1] else ''} | {scale} |")
    svg(curves, out_svg)


if __name__ == "__main__":
    main()
