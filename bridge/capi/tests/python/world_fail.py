"""Failures in one MPI_COMM_WORLD across implementations (ISTHMUS_WORLD),
from mpi4py, as tests/c/world_fail.c does from C: the world's last rank (in
part 1) ends abnormally while the others wait.
Usage: world_fail.py MODE
  abort - the last rank calls comm.Abort(7) while every other rank waits in
          a receive from its own part that nothing will match: only the
          abort can end them.
  kill  - the last rank kills itself (SIGKILL); its part's other ranks wait
          in a receive from it (their launcher ends them). Part 0's ranks: a
          receive from the dead rank, a send to it and an Allreduce on the
          world each raise MPI.Exception whose string says which rank
          failed (mpi4py sets MPI_ERRORS_RETURN on the world); then
          MPI_Finalize. Prints "PASS python kill rank R" per rank of part 0."""

import os
import signal
import sys
from array import array

from mpi4py import MPI

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
appnum = comm.Get_attr(MPI.APPNUM)
mode = sys.argv[1]
last = size - 1
x = array("i", [0])


def fail(what):
    print(f"rank {rank}: FAIL {what}", flush=True)
    comm.Abort(2)


def expect_failure(call, what, naming):
    try:
        call()
    except MPI.Exception as e:
        msg = e.Get_error_string()
        if "has failed" not in msg or naming not in msg:
            fail(f'{what}: error string "{msg}" does not name "{naming}"')
        print(f"rank {rank}: {what}: {msg}", flush=True)
        return
    fail(f"{what} involving the dead rank succeeded")


if appnum is None:
    fail("no MPI_APPNUM on the world")
# Every rank is connected and in the world before the failure.
comm.Barrier()
if mode == "abort":
    if rank == last:
        comm.Abort(7)
    # A receive within this rank's part that nothing matches.
    comm.Recv([x, MPI.INT], source=1 if rank == 0 else rank - 1, tag=99)
    fail("the receive that nothing matches returned")
if mode != "kill":
    fail(f"unknown mode {mode}")
if appnum == 1:
    if rank == last:
        os.kill(os.getpid(), signal.SIGKILL)
    comm.Recv([x, MPI.INT], source=last, tag=99)
    fail("a receive from the killed rank returned")
naming = f"rank {last} of this communicator"
expect_failure(lambda: comm.Recv([x, MPI.INT], source=last, tag=99), "MPI_Recv", naming)
expect_failure(lambda: comm.Send([x, MPI.INT], dest=last, tag=99), "MPI_Send", naming)
# Which rank of part 1 the leader finds gone first is the race of their
# deaths: any "rank N of this communicator".
total = array("i", [0])
expect_failure(
    lambda: comm.Allreduce([array("i", [rank]), MPI.INT], [total, MPI.INT], op=MPI.SUM),
    "MPI_Allreduce",
    "of this communicator",
)
print(f"PASS python kill rank {rank}", flush=True)
