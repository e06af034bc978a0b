"""mpi4py's own MPI-2 calls under the preloaded library, no isthmus import:
open a port, publish it, accept; then every rank exchanges an int with
every remote rank (as tests/c/ports.c does). Argument: SERVICE.
Prints "PASS accept rank <r>"."""
import sys
from array import array

from mpi4py import MPI

service = sys.argv[1]
world = MPI.COMM_WORLD
rank = world.Get_rank()
port = MPI.Open_port() if rank == 0 else None
if rank == 0:
    MPI.Publish_name(service, port)
inter = world.Accept(port, root=0)
assert inter.Is_inter()
rsize = inter.Get_remote_size()
out = array("i", [1000 + rank])
got = [array("i", [-1]) for _ in range(rsize)]
reqs = [inter.Irecv(got[q], source=q, tag=3) for q in range(rsize)]
reqs += [inter.Isend(out, dest=q, tag=3) for q in range(rsize)]
MPI.Request.Waitall(reqs)
assert [g[0] for g in got] == list(range(rsize)), f"got {[g[0] for g in got]}"
inter.Disconnect()
if rank == 0:
    MPI.Unpublish_name(service, port)
    MPI.Close_port(port)
print(f"PASS accept rank {rank}", flush=True)
