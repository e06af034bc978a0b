"""Python side of tests/python.rs: GROUP PEER MODE.

MODE buffer: with a C peer, ints both ways through mpi4py's buffer API.
MODE pickle: with a Python peer, objects both ways through the pickle API.
Prints "PASS <mode> rank <r>".
"""
import sys
from array import array

from mpi4py import MPI

import isthmus

group, peer, mode = sys.argv[1:4]
world = MPI.COMM_WORLD
rank = world.Get_rank()
handle = isthmus.register(group, world)
inter = isthmus.intercomm_create(handle, peer, timeout=120)
assert inter.Is_inter(), "not an intercommunicator"
rsize = inter.Get_remote_size()
if mode == "buffer":
    out = array("i", [1000 + 10 * rank + i for i in range(16)])
    got = array("i", [0] * 16)
    status = MPI.Status()
    reqs = [inter.Irecv(got, source=rank % rsize, tag=5),
            inter.Isend(out, dest=rank % rsize, tag=5)]
    MPI.Request.Waitall(reqs, [status, MPI.Status()])
    expect = [2000 + 10 * (rank % rsize) + i for i in range(16)]
    assert list(got) == expect, f"got {list(got)}"
    assert status.Get_count(MPI.INT) == 16 and status.Get_source() == rank % rsize
elif mode == "pickle":
    left = group < peer
    if left:
        inter.send({"from": group, "rank": rank, "data": list(range(rank + 3))}, dest=rank % rsize, tag=9)
        reply = inter.recv(source=rank % rsize, tag=10)
        assert reply == ("ok", rank), f"reply {reply}"
    else:
        msg = inter.recv(source=MPI.ANY_SOURCE, tag=9)
        assert msg["from"] == peer and msg["data"] == list(range(msg["rank"] + 3)), f"got {msg}"
        inter.send(("ok", msg["rank"]), dest=msg["rank"], tag=10)
else:
    raise SystemExit(f"unknown mode {mode}")
inter.Free()
isthmus.leave(handle)
print(f"PASS {mode} rank {rank}", flush=True)
