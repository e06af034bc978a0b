"""Python side of tests/python.rs: GROUP PEER MODE.

MODE buffer: with a C peer (tests/python/peer.c), ints both ways through
mpi4py's buffer API.
MODE buffers: with a Python peer in the same mode, the same ints, then a
larger message of doubles each way (blocking Send/Recv).
MODE pickle: with a Python peer, objects both ways through the pickle API.
Prints "PASS <mode> rank <r>", and "VENDOR <MPI implementation>" on rank 0.
"""
import sys
from array import array

from mpi4py import MPI

import isthmus

group, peer, mode = sys.argv[1:4]
world = MPI.COMM_WORLD
rank = world.Get_rank()
if rank == 0:
    print(f"VENDOR {MPI.get_vendor()[0]}", flush=True)
handle = isthmus.register(group, world)
inter = isthmus.intercomm_create(handle, peer, timeout=120)
assert inter.Is_inter(), "not an intercommunicator"
rsize = inter.Get_remote_size()
left = group < peer
if mode in ("buffer", "buffers"):
    # Against C, this side is 1000 and C is 2000; between two Python jobs,
    # the lower group name is 1000.
    mine, theirs = (1000, 2000) if mode == "buffer" or left else (2000, 1000)
    out = array("i", [mine + 10 * rank + i for i in range(16)])
    got = array("i", [0] * 16)
    status = MPI.Status()
    reqs = [inter.Irecv(got, source=rank % rsize, tag=5),
            inter.Isend(out, dest=rank % rsize, tag=5)]
    MPI.Request.Waitall(reqs, [status, MPI.Status()])
    expect = [theirs + 10 * (rank % rsize) + i for i in range(16)]
    assert list(got) == expect, f"got {list(got)}"
    assert status.Get_count(MPI.INT) == 16 and status.Get_source() == rank % rsize
    if mode == "buffers":
        # 800 kB each way; the lower group sends first.
        n = 100_000
        big = array("d", [mine + rank + i / 8 for i in range(n)])
        back = array("d", [0.0] * n)
        if left:
            inter.Send(big, dest=rank % rsize, tag=6)
            inter.Recv(back, source=rank % rsize, tag=6, status=status)
        else:
            inter.Recv(back, source=rank % rsize, tag=6, status=status)
            inter.Send(big, dest=rank % rsize, tag=6)
        assert status.Get_count(MPI.DOUBLE) == n, f"count {status.Get_count(MPI.DOUBLE)}"
        assert back == array("d", [theirs + rank % rsize + i / 8 for i in range(n)]), "doubles differ"
elif mode == "pickle":
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
