"""One MPI_COMM_WORLD across implementations (ISTHMUS_WORLD), from mpi4py:
MPI.COMM_WORLD is the world of both parts: its size and this rank, the
part's MPI_APPNUM, a send across the parts (world rank 0 to the last rank
and back) and an Allreduce, with mpi4py's buffer calls.
Usage: world.py PART0_SIZE. Prints "PASS python world rank R of N (appnum A)"."""

import sys
from array import array

from mpi4py import MPI

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n0 = int(sys.argv[1])
appnum = comm.Get_attr(MPI.APPNUM)


def check(ok, what):
    if not ok:
        print(f"rank {rank}: FAIL {what}", flush=True)
        comm.Abort(2)


check(size == 4, f"world size {size}")
check(appnum == (0 if rank < n0 else 1), f"MPI_APPNUM {appnum}")
last = size - 1
x = array("i", [0])
st = MPI.Status()
if rank == 0:
    comm.Send([array("i", [42]), MPI.INT], dest=last, tag=5)
    comm.Recv([x, MPI.INT], source=last, tag=6, status=st)
    check(x[0] == 43 and st.Get_source() == last, f"reply across: {x[0]}")
elif rank == last:
    comm.Recv([x, MPI.INT], source=0, tag=5, status=st)
    check(x[0] == 42 and st.Get_source() == 0, f"send across: {x[0]}")
    comm.Send([array("i", [43]), MPI.INT], dest=0, tag=6)
total = array("i", [0])
comm.Allreduce([array("i", [rank + 1]), MPI.INT], [total, MPI.INT], op=MPI.SUM)
check(total[0] == size * (size + 1) // 2, f"allreduce {total[0]}")
print(f"PASS python world rank {rank} of {size} (appnum {appnum})", flush=True)
