#!/usr/bin/python3
"""PyTorch peer for fivefold's training benchmark: the same LLaMA, the same step, eager float32.

Usage (the bench config is the default):
  /usr/bin/python3 bench/torch_llama_bench.py --vocab 4096 --dim 384 --layers 6 --heads 6 \
      --kv-heads 6 --ffn 1024 --seq 256 --batch 8 --steps 20 --warmup 3 --threads 2 --json

One step = zero grads, forward, mean cross-entropy over B*T tokens, backward, clip the global
grad norm to 1.0, AdamW (lr 3e-4, betas (0.9, 0.95), weight decay 0.1 on every tensor, as
fivefold's optimizer does). The architecture is Hugging Face LlamaForCausalLM's (parameter names
included, so the count can be compared name by name); tests/oracle holds the float64 version
that the serial model is checked against.

With --json, stdout is a single JSON line; the parameter count also goes to stderr.

On torch 2.x, --sdpa (F.scaled_dot_product_attention), --adamw fused and --compile (torch.compile
of the model, compiled during the warm-up steps) give the modern peer at its best; Debian's 1.13
has none of them.

--ddp runs one rank of torch.distributed data parallelism (gloo, CPU). Launch WORLD_SIZE copies
by hand (torchrun is broken in Debian's 1.13), each with MASTER_ADDR, MASTER_PORT, RANK and
WORLD_SIZE in its environment; --batch stays the global batch and rank r trains on rows
[r*B/W, (r+1)*B/W) of each global batch, so the ranks together see what a serial run sees.
The model is wrapped in DistributedDataParallel with its default buckets (bucket_cap_mb=25, a
1 MiB first bucket, gradient_as_bucket_view=False). Rank 0 alone prints, with tokens_per_s
counting the global batch. bench/dp/compare_pytorch_ddp.py is the driver.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=6)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before the timed ones")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rms-eps", type=float, default=1e-5)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--tied", action="store_true", help="tie lm_head to the embedding")
    ap.add_argument("--tokens", help="int32 token ids to sample windows from (default: random)")
    ap.add_argument("--seed", type=int, default=0)
    # torch 1.13's AdamW has no `fused` option (it arrived in 2.0, CUDA first), so the choice is
    # foreach vs the per-tensor loop. On CPU the loop measured faster on the bench config
    # (26 ms vs 35 ms per step, 2 threads): 1.13's CPU foreach kernels are per-tensor loops
    # anyway and the foreach path materialises extra temporaries.
    ap.add_argument("--adamw", choices=("for-loop", "foreach", "fused"), default="for-loop",
                    help="AdamW implementation (default for-loop, the faster one on 1.13; fused needs "
                         "torch >= 2.4 on the CPU)")
    ap.add_argument("--sdpa", action="store_true",
                    help="attention through F.scaled_dot_product_attention (torch >= 2.0: its fused CPU "
                         "flash kernel) instead of the explicit (B, H, T, T) softmax")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (torch >= 2.0; the compile falls in the warm-up steps)")
    ap.add_argument("--json", action="store_true", help="print one JSON line on stdout")
    ap.add_argument("--autocast-bf16", action="store_true",
                    help="forward and loss under torch.autocast('cpu', bfloat16): PyTorch's mixed precision")
    ap.add_argument("--ddp", action="store_true",
                    help="one DistributedDataParallel rank (gloo); RANK, WORLD_SIZE, MASTER_ADDR "
                         "and MASTER_PORT come from the environment; --batch is the global batch")
    a = ap.parse_args(argv)
    if a.dim % a.heads or (a.dim // a.heads) % 2 or a.heads % a.kv_heads:
        ap.error("need dim % heads == 0, an even head dim, and heads % kv-heads == 0")
    if min(a.vocab, a.dim, a.layers, a.ffn, a.seq, a.batch, a.steps, a.threads) < 1 or a.warmup < 0:
        ap.error("sizes, --steps and --threads must be positive, --warmup non-negative")
    return a


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Debian's torch does its GEMMs in OpenBLAS (pthreads build), whose thread pool ignores
    # torch.set_num_threads and sizes itself from this variable when the library loads, i.e. at
    # `import torch`. Set it first so --threads bounds the GEMMs too, not just torch's OpenMP ops.
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, sdpa=False):
        super().__init__()
        self.H, self.Hkv, self.D = n_heads, n_kv_heads, dim // n_heads
        self.sdpa = sdpa
        self.q_proj = nn.Linear(dim, n_heads * self.D, bias=False)
        self.k_proj = nn.Linear(dim, n_kv_heads * self.D, bias=False)
        self.v_proj = nn.Linear(dim, n_kv_heads * self.D, bias=False)
        self.o_proj = nn.Linear(n_heads * self.D, dim, bias=False)

    def forward(self, x, cos, sin, future):
        B, T, _ = x.shape
        H, Hkv, D = self.H, self.Hkv, self.D
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)          # (B, H, T, D)
        k = self.k_proj(x).view(B, T, Hkv, D).transpose(1, 2)        # (B, Hkv, T, D)
        v = self.v_proj(x).view(B, T, Hkv, D).transpose(1, 2)        # (B, Hkv, T, D)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if Hkv != H:
            # HF repeat_kv: query head h reads kv head h // (H / Hkv).
            rep = H // Hkv
            k = k[:, :, None].expand(B, Hkv, rep, T, D).reshape(B, H, T, D)
            v = v[:, :, None].expand(B, Hkv, rep, T, D).reshape(B, H, T, D)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(y.transpose(1, 2).reshape(B, T, H * D))
        # Explicit softmax(QK^T / sqrt(D)) V with a causal mask: torch 1.13 predates
        # F.scaled_dot_product_attention (2.0), so the peer materialises the (B, H, T, T)
        # scores as eager PyTorch of this version would.
        scores = (q @ k.transpose(-2, -1)) * (D ** -0.5)              # (B, H, T, T)
        scores = scores.masked_fill(future, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v                             # (B, H, T, D)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * D))


class MLP(nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(dim, ffn, bias=False)
        self.up_proj = nn.Linear(dim, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.input_layernorm = RMSNorm(a.dim, a.rms_eps)
        self.self_attn = Attention(a.dim, a.heads, a.kv_heads, a.sdpa)
        self.post_attention_layernorm = RMSNorm(a.dim, a.rms_eps)
        self.mlp = MLP(a.dim, a.ffn)

    def forward(self, x, cos, sin, future):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, future)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed_tokens = nn.Embedding(a.vocab, a.dim)
        self.layers = nn.ModuleList(DecoderLayer(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.dim, a.rms_eps)
        D = a.dim // a.heads
        inv_freq = 1.0 / (a.rope_theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        freqs = torch.outer(torch.arange(a.seq, dtype=torch.float64), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)                       # (seq, D), rotate-half
        # Tables are built once in float64 then rounded, so they are not a source of drift.
        self.register_buffer("cos", emb.cos().float(), persistent=False)
        self.register_buffer("sin", emb.sin().float(), persistent=False)
        self.register_buffer("future", torch.ones(a.seq, a.seq, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, idx):
        T = idx.shape[1]
        cos, sin, future = self.cos[:T], self.sin[:T], self.future[:T, :T]
        x = self.embed_tokens(idx)                                    # (B, T, C)
        for layer in self.layers:
            x = layer(x, cos, sin, future)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.model = LlamaModel(a)
        self.lm_head = None if a.tied else nn.Linear(a.dim, a.vocab, bias=False)
        for m in self.modules():
            # HF's initializer_range 0.02; only matters so the loss curve looks like a real run.
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        h = self.model(idx)                                           # (B, T, C)
        w = self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return F.linear(h, w)                                         # (B, T, V)


def make_batches(a, n):
    """n (inputs, targets) pairs, each (B, T), fixed by --seed; drawn before timing starts."""
    gen = torch.Generator().manual_seed(a.seed)
    if a.tokens:
        ids = torch.from_numpy(np.fromfile(a.tokens, dtype="<i4").astype(np.int64))
        if ids.numel() < a.seq + 1:
            sys.exit(f"{a.tokens}: {ids.numel()} tokens, need at least seq+1 = {a.seq + 1}")
        if ids.min() < 0 or ids.max() >= a.vocab:
            sys.exit(f"{a.tokens}: ids span [{ids.min()}, {ids.max()}], outside vocab {a.vocab}")
    out = []
    for _ in range(n):
        if a.tokens:
            starts = torch.randint(0, ids.numel() - a.seq, (a.batch,), generator=gen)
            x = torch.stack([ids[s:s + a.seq + 1] for s in starts.tolist()])
        else:
            x = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen)
        out.append((x[:, :-1].contiguous(), x[:, 1:].contiguous()))
    return out


def main(a):
    torch.set_num_threads(a.threads)
    rank, world = 0, 1
    if a.ddp:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if a.batch % world:
            sys.exit(f"--batch {a.batch} (the global batch) must divide by WORLD_SIZE {world}")
        # env:// rendezvous through MASTER_ADDR/MASTER_PORT, as torchrun would have set up.
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(a.seed)
    model = LlamaForCausalLM(a)
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"pytorch llama params: {n_params}", file=sys.stderr)
    if a.ddp:
        # The buffers are the constant RoPE tables and causal mask, built identically on every
        # rank, so DDP is told not to sync them. Two reasons: gloo cannot broadcast the bool
        # mask ("Invalid scalar type" in the constructor's initial sync), and by default DDP
        # would re-broadcast every buffer from rank 0 before each forward, a cost fivefold does
        # not pay (it sends nothing of the kind). With no buffers left, broadcast_buffers=True
        # is a no-op, so the constructor keeps all its defaults, bucketing included
        # (bucket_cap_mb=25, a 1 MiB first bucket): the peer is DDP as a user gets it.
        DDP = torch.nn.parallel.DistributedDataParallel
        DDP._set_params_and_buffers_to_ignore_for_model(
            model, [name for name, _ in model.named_buffers()])
        model = DDP(model)
    # Weight decay on every tensor (norms and embeddings included) to match a plain AdamW.
    impl = {"foreach": {"foreach": True}, "fused": {"fused": True}}.get(a.adamw, {"foreach": False})
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, **impl)
    if a.compile:
        model = torch.compile(model)
    batches = make_batches(a, a.warmup + a.steps)
    if a.ddp:
        # Every rank draws the same global batches (same seed) and keeps its contiguous slice of
        # rows, so the union over ranks is exactly the serial run's data.
        rows = a.batch // world
        batches = [(x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows])
                   for x, y in batches]

    def step(inputs, targets):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast_bf16):
            logits = model(inputs)
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), targets.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()   # .item() also ends the step: nothing is left queued

    losses, times = [], []
    for i, (x, y) in enumerate(batches):
        t0 = time.perf_counter()
        loss = step(x, y)
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            losses.append(loss)
            times.append(dt)

    peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    rss_per_rank = [peak_rss_mb]
    if a.ddp:
        # All after the timed loop, so none of it is charged to a step. The loss each rank saw
        # is the mean over its rows; with equal rows per rank, the mean over ranks is the
        # global batch's loss, the number a serial run would print.
        lt = torch.tensor(losses, dtype=torch.float64)
        dist.all_reduce(lt)
        losses = (lt / world).tolist()
        rss_per_rank = [None] * world
        dist.all_gather_object(rss_per_rank, peak_rss_mb)
        # The last collective: past it, no rank has a message in flight, so each may leave.
        # The process group is never torn down (see the os._exit at the bottom).
        dist.barrier()
        if rank != 0:
            return 0
    # Rank 0's clock, like fivefold's metrics.jsonl: every DDP step ends in the same gradient
    # all-reduce, so the ranks' step times differ only by scheduling noise.
    tokens = a.batch * a.seq   # the global batch under --ddp
    res = {
        "impl": "pytorch",
        # Total timed tokens over total timed seconds (not 1/median), so one slow step counts.
        "tokens_per_s": round(tokens * len(times) / sum(times), 1),
        "step_ms_median": round(1e3 * statistics.median(times), 2),
        "step_ms_all": [round(1e3 * t, 2) for t in times],
        # Linux reports ru_maxrss in KiB; it is the process peak, warmup and model included.
        # Under --ddp, rank 0's; peak_rss_mb_per_rank has them all.
        "peak_rss_mb": peak_rss_mb,
        "params": n_params,
        "threads": a.threads,
        "optimizer": f"torch.optim.AdamW({a.adamw})",
        "loss_first": round(losses[0], 4),
        "loss_last": round(losses[-1], 4),
        "torch": torch.__version__,
        "config": {"vocab": a.vocab, "dim": a.dim, "layers": a.layers, "heads": a.heads,
                   "kv_heads": a.kv_heads, "ffn": a.ffn, "seq": a.seq, "batch": a.batch,
                   "tied": a.tied, "autocast_bf16": a.autocast_bf16, "sdpa": a.sdpa, "compile": a.compile, "steps": a.steps, "warmup": a.warmup,
                   "data": a.tokens or f"random(seed={a.seed})"},
    }
    if a.ddp:
        # Extra keys only; the serial JSON keeps exactly its old shape.
        # Read back from the wrapper rather than restated, so the record cannot go stale.
        res["ddp"] = {"world_size": world, "backend": "gloo",
                      "bucket_cap_mb": model.bucket_bytes_cap / 2**20,
                      "first_bucket_mb": dist._DEFAULT_FIRST_BUCKET_BYTES / 2**20,
                      "synced_buffers": len(model.modules_buffers),
                      "rows_per_rank": a.batch // world}
        res["peak_rss_mb_per_rank"] = rss_per_rank
    if a.json:
        print(json.dumps(res))
    else:
        print(f"pytorch {torch.__version__}, {a.threads} threads: params {n_params}, "
              f"{res['tokens_per_s']} tokens/s, median step {res['step_ms_median']} ms, "
              f"peak RSS {res['peak_rss_mb']} MB, loss {res['loss_first']} -> {res['loss_last']}")
    return 0


if __name__ == "__main__":
    code = main(ARGS)
    if ARGS.ddp:
        # Leave without tearing torch.distributed down. In 1.13, freeing DDP's Reducer destroys
        # the gloo process group, which joins its worker threads while holding the GIL; a worker
        # still releasing a finished collective's tensor needs the GIL to drop the tensor's
        # Python object, and the two wait for each other forever (seen here: rank 0 had printed
        # its result, then both ranks hung at exit). Nothing is left to clean up: the result is
        # printed and the peer ranks are past the final barrier.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
