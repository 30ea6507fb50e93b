#!/usr/bin/python3
"""Bus bandwidth of torch.distributed all_reduce with the gloo backend, for the sizes of
bench_allreduce, so bench/RESULTS.md can put Comm, raw MPI and gloo side by side.

    /usr/bin/python3 bench/comm/gloo_allreduce.py [--ranks 2] [--reps 11] [--port 29533]

Starts the ranks itself with MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE set by hand (torchrun is
broken on this machine). busbw = S / t * 2(n-1)/n (nccl-tests), t = the slowest rank's time
per call, median over reps; float32 sum, in place, as bench_allreduce.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def size_name(nbytes):
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def worker(rank, world, reps):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # one core per rank, like the MPI ranks
    dist.init_process_group("gloo", rank=rank, world_size=world)  # env:// from the launcher
    if rank == 0:
        print(f"## gloo all_reduce bus bandwidth, {world} ranks, float32 sum, median of {reps} reps")
        print("| size | gloo busbw GB/s |\n|---|---|", flush=True)
    nbytes = 256 << 10
    while nbytes <= 64 << 20:
        # Zeros stay zeros: repeated in-place sums of ones would reach inf and time other code.
        x = torch.zeros(nbytes // 4, dtype=torch.float32)
        iters = max(2, min(100, (128 << 20) // nbytes))  # same batch sizes as bench_allreduce
        dist.all_reduce(x)  # warm-up
        times = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            t = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank's time
            times.append(t.item())
        busbw = nbytes / statistics.median(times) * 2 * (world - 1) / world / 1e9
        if rank == 0:
            print(f"| {size_name(nbytes)} | {busbw:.2f} |", flush=True)
        nbytes *= 2
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--worker-rank", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_rank is not None:
        worker(args.worker_rank, args.ranks, args.reps)
        return 0
    procs = []
    for rank in range(args.ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
                   RANK=str(rank), WORLD_SIZE=str(args.ranks), GLOO_SOCKET_IFNAME="lo",
                   OMP_NUM_THREADS="1")
        cmd = [sys.executable, __file__, "--ranks", str(args.ranks), "--reps", str(args.reps),
               "--worker-rank", str(rank)]
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        print(f"a gloo rank failed (exit codes {codes}); if the port is taken, pass --port", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
