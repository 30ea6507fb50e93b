#!/usr/bin/python3
"""The kernel's CPU per byte over the link between two namespaced nodes, measured without fivefold
or MPI: a TCP stream each way between nodes 0 and 1 (plain sockets, a thread per direction in each
node), this machine's /proc/stat system + irq + softirq time over the transfers less that of an
idle window as long, over the bytes through this machine's kernel (both nodes live on it: every
byte is sent by one of them and received by the other, so twice the bytes that crossed).
Prints the seconds per byte; the median of three rounds.

Usage (as root): FF_NODES_PREFIX=P tests/support/netns_nodes.sh up 2 1gbit, then
  /usr/bin/python3 bench/multinode/socket_link_cpu.py tests/support/netns_nodes.sh [SECONDS]
(the same FF_NODES_PREFIX), and `netns_nodes.sh down`. A check of calibrate's figure
(`[across_nodes] cpu_seconds_per_byte`) by other means."""
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

PORT = 47311
CHUNK = 1 << 20


def kernel_seconds():
    fields = open("/proc/stat").readline().split()
    system, irq, softirq = int(fields[3]), int(fields[6]), int(fields[7])
    return (system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def node(me, peer):
    """One node's side: connect both ways, then at "go" (a line on stdin with the byte count) send
    that many bytes to the peer while receiving its stream; print the bytes sent plus received."""
    listener = socket.create_server((me, PORT))
    out = None
    for _ in range(500):  # the peer's listener may not be up yet
        try:
            out = socket.create_connection((peer, PORT))
            break
        except OSError:
            time.sleep(0.02)
    conn, _ = listener.accept()
    print("ready", flush=True)
    while True:
        line = sys.stdin.readline()
        if not line.strip():
            return
        nbytes, got = int(line), [0]

        def receive():
            view = memoryview(bytearray(CHUNK))
            while got[0] < nbytes:
                got[0] += conn.recv_into(view, min(CHUNK, nbytes - got[0]))

        t = threading.Thread(target=receive)
        t.start()
        payload = memoryview(bytes(CHUNK))
        for _ in range(nbytes // CHUNK):
            out.sendall(payload)
        t.join()
        print(nbytes + got[0], flush=True)


def main():
    if sys.argv[1] == "--node":
        node(sys.argv[2], sys.argv[3])
        return
    harness = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    addresses = ["192.0.2.10", "192.0.2.11"]
    procs = [subprocess.Popen([harness, "exec", str(i), "/usr/bin/python3", os.path.abspath(__file__), "--node",
                               addresses[i], addresses[1 - i]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for i in (0, 1)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    per_byte = []
    nbytes = CHUNK * 16
    for rnd in range(4):  # the first sizes the transfers to `seconds`
        k0, t0 = kernel_seconds(), time.monotonic()
        for p in procs:
            p.stdin.write(f"{nbytes}\n")
            p.stdin.flush()
        through = sum(int(p.stdout.readline()) for p in procs)
        busy, kernel = time.monotonic() - t0, kernel_seconds() - k0
        k1 = kernel_seconds()
        time.sleep(busy)
        idle = kernel_seconds() - k1
        if rnd == 0:
            nbytes = max(1, int(nbytes * seconds / busy) // CHUNK) * CHUNK
            continue
        per_byte.append(max(0.0, kernel - idle) / through)
    for p in procs:
        p.stdin.write("\n")
        p.stdin.flush()
        p.wait()
    print(f"{statistics.median(per_byte):.6g}")


if __name__ == "__main__":
    main()
