"""Python side of tests/python.rs: GROUP PEER MODE.

MODE buffer: with a C peer (tests/python/peer.c), ints both ways through
mpi4py's buffer API.
MODE buffers: with a Python peer in the same mode, the same ints, then a
larger message of doubles each way (blocking Send/Recv).
MODE pickle: with a Python peer, objects both ways through the pickle API.
MODE coll: with a Python peer, Barrier, then Bcast (buffer API) from rank 0
of each job in turn, with MPI's intercommunicator roots (MPI.ROOT,
MPI.PROC_NULL, the remote root's rank). (The pickle API's bcast is not
tried: mpi4py on MPICH broadcasts the pickle's length as an MPI_COUNT, on
Open MPI as an MPI_INT, which Isthmus refuses as a type mismatch.)
MODE merge: with a Python peer, Merge() (the left job first), the merged
size and rank, Allreduce with MPI.SUM and with a Python-defined
non-commutative operation, Split by job.
Prints "PASS <mode> rank <r>", and "VENDOR <MPI implementation>" and
"LIBRARY <the first line of MPI.Get_library_version()>" on rank 0.
"""
import sys
from array import array

from mpi4py import MPI

import isthmus

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)

group, peer, mode = sys.argv[1:4]
world = MPI.COMM_WORLD
rank = world.Get_rank()
if rank == 0:
    print(f"VENDOR {MPI.get_vendor()[0]}", flush=True)
    print(f"LIBRARY {MPI.Get_library_version().splitlines()[0]}", flush=True)
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
elif mode == "coll":
    inter.Barrier()
    for from_left in (True, False):
        if left == from_left:
            root = MPI.ROOT if rank == 0 else MPI.PROC_NULL
        else:
            root = 0
        want = array("d", [(2.5 if from_left else -7.25) * i for i in range(10_000)])
        buf = array("d", want) if root == MPI.ROOT else array("d", [0.0] * len(want))
        inter.Bcast(buf, root=root)
        if root == MPI.PROC_NULL:
            assert buf == array("d", [0.0] * len(want)), "a bystander received the broadcast"
        else:
            assert buf == want, "the broadcast doubles differ"
    inter.Barrier()
elif mode == "merge":
    # The left job first (it passes high=False), as one communicator.
    merged = inter.Merge(high=not left)
    n, r = merged.Get_size(), merged.Get_rank()
    assert n == world.Get_size() + rsize, f"merged size {n}"
    assert r == (0 if left else rsize) + rank, f"merged rank {r}"
    total = array("d", [0.0])
    merged.Allreduce(array("d", [float(r + 1)]), total, op=MPI.SUM)
    assert total[0] == n * (n + 1) / 2, f"allreduce {total[0]}"

    def first_last(inbuf, inoutbuf, datatype):
        # (a, b) op (c, d) = (a, d): associative, not commutative.
        i, io = memoryview(inbuf).cast("B").cast("i"), memoryview(inoutbuf).cast("B").cast("i")
        for k in range(0, len(io), 2):
            io[k] = i[k]

    op = MPI.Op.Create(first_last, commute=False)
    pair = array("i", [-1, -1])
    merged.Allreduce(array("i", [r, r]), pair, op=op)
    assert list(pair) == [0, n - 1], f"python-defined op gave {list(pair)}"
    op.Free()
    job = merged.Split(color=0 if left else 1, key=r)
    assert (job.Get_size(), job.Get_rank()) == (world.Get_size(), rank), "split by job"
    job.Free()
    merged.Free()
else:
    raise SystemExit(f"unknown mode {mode}")
inter.Free()
isthmus.leave(handle)
print(f"PASS {mode} rank {rank}", flush=True)
