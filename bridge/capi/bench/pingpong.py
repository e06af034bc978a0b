"""mpi4py ping-pong over an Isthmus intercommunicator, for
bench/connect.sh: the same sizes, window and RESULT lines as
pingpong.c (label "py"), through the isthmus package and mpi4py's buffer
API (bytearray buffers), plus the pickle API's latency for a small object
(label "pypickle", size 8: an int).

    python3 pingpong.py GROUP PEER first|second ITERS BW_MIB

Run under libisthmus of mpi4py's MPI, preloaded; rank 0 of each job takes
part, the "first" side prints.
"""
import sys

from mpi4py import MPI

import isthmus

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)

WINDOW = 16
LAT_SIZES = (0, 8, 1024)
BW_SIZES = (65536, 1 << 20, 4 << 20)


def report(label, samples):
    samples.sort()
    n = len(samples)
    print(f"RESULT {label} median_us={samples[n // 2]:.3f} "
          f"p99_us={samples[int(n * 0.99)]:.3f} n={n}", flush=True)


def latency(inter, first, iters, label, send, recv):
    warm = iters // 10 + 10
    samples = []
    for i in range(iters + warm):
        t = MPI.Wtime()
        if first:
            send()
            recv()
        else:
            recv()
            send()
        if i >= warm:
            samples.append((MPI.Wtime() - t) / 2 * 1e6)
    if first:
        report(label, samples)


def run(inter, first, iters, bw_mib):
    buf = bytearray(4 << 20)
    for size in LAT_SIZES:
        msg = [buf, size, MPI.BYTE]
        latency(inter, first, iters, f"py_lat_{size}",
                lambda: inter.Send(msg, dest=0, tag=1),
                lambda: inter.Recv(msg, source=0, tag=1))
    latency(inter, first, iters, "pypickle_lat_8",
            lambda: inter.send(12345678, dest=0, tag=4),
            lambda: inter.recv(source=0, tag=4))
    ack = bytearray(1)
    for size in BW_SIZES:
        reps = max(4, (bw_mib << 20) // (size * WINDOW))
        msg = [buf, size, MPI.BYTE]
        elapsed = 0.0
        for r in range(reps + 2):
            t = MPI.Wtime()
            if first:
                MPI.Request.Waitall([inter.Isend(msg, dest=0, tag=2) for _ in range(WINDOW)])
                inter.Recv([ack, 1, MPI.BYTE], source=0, tag=3)
            else:
                for _ in range(WINDOW):
                    inter.Recv(msg, source=0, tag=2)
                inter.Send([ack, 1, MPI.BYTE], dest=0, tag=3)
            if r >= 2:
                elapsed += MPI.Wtime() - t
        if first:
            n = reps * WINDOW
            print(f"RESULT py_bw_{size} bytes={size} mbps={size * n / elapsed / 1e6:.1f} n={n}",
                  flush=True)


def main():
    if len(sys.argv) != 6 or sys.argv[3] not in ("first", "second"):
        raise SystemExit("usage: pingpong.py GROUP PEER first|second ITERS BW_MIB")
    group, peer, side = sys.argv[1:4]
    iters, bw_mib = int(sys.argv[4]), int(sys.argv[5])
    world = MPI.COMM_WORLD
    handle = isthmus.register(group, world)
    inter = isthmus.intercomm_create(handle, peer, timeout=120)
    if world.Get_rank() == 0:
        run(inter, side == "first", iters, bw_mib)
    inter.Free()
    isthmus.leave(handle)


main()
