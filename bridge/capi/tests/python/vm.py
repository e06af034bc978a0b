"""Python side of tests/vmcalls.rs: the virtual machine from the isthmus
package, and mpi4py's Spawn across implementations.

vm.py calls SLEEPER GHOST
    Spawns SLEEPER (a C program of an MPI implementation, run as
    `SLEEPER sleeper`) as a 2-rank job, waits until both ranks run, kills it
    and prints the events of its subscription ("EVENT task_exit ...",
    "EVENT job_exit ..."); adds and deletes the host GHOST and prints those
    events; then "ERROR <case> <message>" for each bad call, and
    "PASS calls rank 0".
vm.py parent IMPL NP PYTHONPATH
    MPI.COMM_SELF.Spawn(sys.executable, [this script, "child"], NP) with
    the info keys isthmus_impl=IMPL and isthmus_env (PYTHONPATH, and a
    variable with a ';' in it that the children check), then with the
    children: point-to-point both ways, Allreduce, Merge, Disconnect.
    Prints "VENDOR ..." and "PASS parent rank 0".
vm.py child
    MPI.Comm.Get_parent(), the same exchanges; its verdict goes to the
    parent.
vm.py cross WORKER_A WORKER_B
    MPI.COMM_WORLD.Spawn_multiple on every rank, the last one the root, of
    one rank of WORKER_A and two of WORKER_B (tests/c/spawn.c of the two
    implementations, run as `worker first cross` and `worker second
    cross`, with the info key isthmus_env ISTHMUS_TEST_APP=one and =two):
    the children are one world of both implementations. Then the parents'
    side of spawn.c's exchange: point-to-point both ways, Bcast both ways,
    Allreduce, Merge refused (three jobs); rank 0 prints each child's MPI
    library ("CHILD-LIBRARY <q> <line>") and checks its verdict;
    Disconnect. Prints "VENDOR ..." and "PASS cross rank <r>" on each rank.
"""
import os
import sys
import time
from array import array

from mpi4py import MPI

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)

world = MPI.COMM_WORLD
rank = world.Get_rank()


def show(e):
    fields = " ".join(f"{k}={v}" for k, v in e._asdict().items() if v is not None and k != "kind")
    print(f"EVENT {e.kind} {fields}", flush=True)


def calls(sleeper, ghost):
    import isthmus
    hosts = isthmus.hosts()
    assert hosts and hosts[0].up and "mpich" in hosts[0].taskers, hosts
    job = isthmus.spawn(sleeper, ["sleeper"], ranks=2)
    print(f"SPAWNED job={job}", flush=True)
    with isthmus.events(["task_exit", "job_exit"], jobs=[job], timeout=30) as ev:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            mine = [j for j in isthmus.jobs() if j.id == job]
            assert mine, f"job {job} not listed"
            if mine[0].running == 2:
                print(f"JOB {mine[0]}", flush=True)
                break
            time.sleep(0.05)
        isthmus.signal(job, 18)  # SIGCONT: harmless
        isthmus.kill(job)
        for e in ev:
            show(e)
            if e.kind == "job_exit":
                break
    with isthmus.events(["host_added", "host_deleted"], timeout=10) as ev:
        isthmus.add_host(ghost, slots=3)
        assert any(h.name == ghost and h.slots == 3 and not h.up for h in isthmus.hosts())
        assert isthmus.delete_host(ghost) == 0
        for e in ev:
            show(e)
            if e.kind == "host_deleted":
                break
        t0 = time.monotonic()
        assert ev.next(0.3) is None
        waited = time.monotonic() - t0
        assert 0.29 <= waited < 3, waited
        print(f"TIMEOUT waited={waited:.3f}", flush=True)

    def error(case, f, *args, **kw):
        try:
            f(*args, **kw)
        except isthmus.IsthmusError as e:
            print(f"ERROR {case} {e.Get_error_string()}", flush=True)
        except ValueError as e:
            print(f"ERROR {case} {e}", flush=True)
        else:
            raise AssertionError(f"{case} succeeded")

    error("kill-unknown", isthmus.kill, 987654)
    error("spawn-missing", isthmus.spawn, "/no/such/program")
    error("spawn-env", isthmus.spawn, sleeper, env="FOO")
    error("spawn-no-tasker", isthmus.spawn, sleeper, implementation="impi")
    error("delete-host-unknown", isthmus.delete_host, "no-such-host")
    error("events-kind", isthmus.events, ["hosts"])
    closed = isthmus.events(["job_exit"])
    closed.close()
    error("events-closed", closed.next, 0)
    print(f"PASS calls rank {rank}", flush=True)


def exchange(inter, parent):
    """Both sides; returns the number of failed checks."""
    bad = 0
    rsize, lrank = inter.Get_remote_size(), inter.Get_rank()
    if parent:
        for q in range(rsize):
            inter.Send(array("i", [100 + q]), dest=q, tag=7)
            back = array("i", [0])
            inter.Recv(back, source=q, tag=8)
            bad += back[0] != 2 * (100 + q) + 1
    else:
        got = array("i", [0])
        inter.Recv(got, source=0, tag=7)
        bad += got[0] != 100 + lrank
        inter.Send(array("i", [2 * got[0] + 1]), dest=0, tag=8)
    mine = array("i", [1000 + lrank if parent else lrank + 1])
    total = array("i", [0])
    inter.Allreduce(mine, total, op=MPI.SUM)
    want = sum(q + 1 if parent else 1000 + q for q in range(rsize))
    bad += total[0] != want
    merged = inter.Merge(high=not parent)
    bad += merged.Get_size() != inter.Get_size() + rsize
    bad += merged.Get_rank() != (lrank if parent else rsize + lrank)
    merged.Free()
    return bad


def parent(impl, np, pythonpath):
    import isthmus
    print(f"VENDOR {MPI.get_vendor()[0]}", flush=True)
    info = MPI.Info.Create()
    info.Set("isthmus_impl", impl)
    info.Set("isthmus_env", isthmus.env_text({"PYTHONPATH": pythonpath, "ISTHMUS_TEST_WORD": "a;b"}))
    inter = MPI.COMM_SELF.Spawn(sys.executable, args=[os.path.abspath(__file__), "child"],
                                maxprocs=np, info=info)
    info.Free()
    assert inter.Get_remote_size() == np
    bad = exchange(inter, True)
    assert bad == 0, f"{bad} checks failed"
    for q in range(np):
        verdict = array("i", [-1])
        inter.Recv(verdict, source=q, tag=9)
        assert verdict[0] == 0, f"child {q}: {verdict[0]} checks failed"
    inter.Disconnect()
    print(f"PASS parent rank {rank}", flush=True)


def child():
    inter = MPI.Comm.Get_parent()
    assert inter != MPI.COMM_NULL, "no parent"
    bad = exchange(inter, False)
    bad += os.environ.get("ISTHMUS_TEST_WORD") != "a;b"
    inter.Send(array("i", [bad]), dest=0, tag=9)
    inter.Disconnect()
    print(f"child rank {rank} of {MPI.get_vendor()[0]}: {bad} failed checks", flush=True)


def cross_exchange(inter):
    """The parents' side of tests/c/spawn.c's `exchange` with `cross` (C
    types: the children are C); returns the number of failed checks."""
    bad = 0
    rsize, lrank = inter.Get_remote_size(), inter.Get_rank()
    # Point-to-point: the parents' rank 0 to each child and back, then the
    # children's rank 0 to each parent and back.
    if lrank == 0:
        for q in range(rsize):
            inter.Send([array("i", [100 + q]), MPI.INT], dest=q, tag=7)
            back = array("i", [0])
            inter.Recv([back, MPI.INT], source=q, tag=8)
            bad += back[0] != 2 * (100 + q) + 1
    got = array("i", [0])
    inter.Recv([got, MPI.INT], source=0, tag=7)
    bad += got[0] != 200 + lrank
    inter.Send([array("i", [2 * got[0] + 1]), MPI.INT], dest=0, tag=8)
    # Bcast: the parents' rank 0 to the children, then the other way.
    sent = array("d", [1.5, -2.0, 1e10])
    inter.Bcast([sent, MPI.DOUBLE], root=MPI.ROOT if lrank == 0 else MPI.PROC_NULL)
    got = array("d", [0.0, 0.0, 0.0])
    inter.Bcast([got, MPI.DOUBLE], root=0)
    bad += list(got) != [1.5, -2.0, 1e10 + 1]
    total = array("i", [0])
    inter.Allreduce([array("i", [1000 + lrank]), MPI.INT], [total, MPI.INT], op=MPI.SUM)
    bad += total[0] != sum(q + 1 for q in range(rsize))
    # The intercommunicator spans three jobs: no merge, and it says why.
    inter.Set_errhandler(MPI.ERRORS_RETURN)
    try:
        inter.Merge(high=False).Free()
        bad += 1
    except MPI.Exception as e:
        bad += "three jobs" not in e.Get_error_string()
    return bad


def cross(worker_a, worker_b):
    if rank == 0:
        print(f"VENDOR {MPI.get_vendor()[0]}", flush=True)
    infos = []
    for app in ("one", "two"):
        info = MPI.Info.Create()
        info.Set("isthmus_env", f"ISTHMUS_TEST_APP={app}")
        infos.append(info)
    errcodes = []
    inter = world.Spawn_multiple([worker_a, worker_b],
                                 args=[["worker", "first", "cross"], ["worker", "second", "cross"]],
                                 maxprocs=[1, 2], info=infos, root=world.Get_size() - 1,
                                 errcodes=errcodes)
    for info in infos:
        info.Free()
    assert errcodes == [[0], [0, 0]], errcodes  # mpi4py: one list per command
    assert inter.Get_remote_size() == 3, inter.Get_remote_size()
    assert (inter.Get_size(), inter.Get_rank()) == (world.Get_size(), rank)
    bad = cross_exchange(inter)
    assert bad == 0, f"{bad} checks failed"
    if inter.Get_rank() == 0:
        for q in range(3):
            line = bytearray(256)
            inter.Recv([line, MPI.CHAR], source=q, tag=10)
            text = line.split(b"\0")[0].decode()
            print(f"CHILD-LIBRARY {q} {text}", flush=True)
        for q in range(3):
            verdict = array("i", [-1])
            inter.Recv([verdict, MPI.INT], source=q, tag=9)
            assert verdict[0] == 0, f"child {q}: {verdict[0]} checks failed"
    inter.Disconnect()
    assert inter == MPI.COMM_NULL
    print(f"PASS cross rank {rank}", flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "calls":
        calls(*sys.argv[2:4])
    elif what == "parent":
        parent(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif what == "child":
        child()
    elif what == "cross":
        cross(*sys.argv[2:4])
