"""mpi4py's own MPI-2 calls under the preloaded library, no isthmus import.
Arguments: MODE SERVICE.

MODE accept: open a port, publish it, accept. MODE connect: look the name
up (retried, with a deadline), connect. Then every rank exchanges an int
with every remote rank (as tests/c/ports.c does, so either side may be that
C program), and disconnects. Prints "VENDOR <MPI implementation>" on rank 0
and "PASS <mode> rank <r>"."""
import sys
import time
from array import array

from mpi4py import MPI

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)

mode, service = sys.argv[1:3]
accepting = mode == "accept"
if mode not in ("accept", "connect"):
    raise SystemExit(f"unknown mode {mode}")
world = MPI.COMM_WORLD
rank = world.Get_rank()
port = None
if rank == 0:
    print(f"VENDOR {MPI.get_vendor()[0]}", flush=True)
    if accepting:
        port = MPI.Open_port()
        MPI.Publish_name(service, port)
    else:
        deadline = time.monotonic() + 60
        while port is None:
            try:
                port = MPI.Lookup_name(service)
            except MPI.Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
inter = world.Accept(port, root=0) if accepting else world.Connect(port, root=0)
assert inter.Is_inter()
rsize = inter.Get_remote_size()
out = array("i", [1000 * accepting + rank])
got = [array("i", [-1]) for _ in range(rsize)]
reqs = [inter.Irecv(got[q], source=q, tag=3) for q in range(rsize)]
reqs += [inter.Isend(out, dest=q, tag=3) for q in range(rsize)]
MPI.Request.Waitall(reqs)
expect = [1000 * (not accepting) + q for q in range(rsize)]
assert [g[0] for g in got] == expect, f"got {[g[0] for g in got]}, expected {expect}"
inter.Disconnect()
if rank == 0 and accepting:
    MPI.Unpublish_name(service, port)
    MPI.Close_port(port)
print(f"PASS {mode} rank {rank}", flush=True)
