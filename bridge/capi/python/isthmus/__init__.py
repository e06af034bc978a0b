"""Isthmus for mpi4py.

Register a communicator under a group name, form an intercommunicator with
a separately started job (of any MPI implementation), and use it as an
``mpi4py.MPI.Intercomm`` — point-to-point with mpi4py's buffer and pickle
APIs alike::

    from mpi4py import MPI
    import isthmus
    handle = isthmus.register("ocean", MPI.COMM_WORLD)
    inter = isthmus.intercomm_create(handle, "atmosphere")
    inter.send({"step": 1}, dest=0, tag=7)

Run the program under the library built for mpi4py's MPI, preloaded, so
that mpi4py's own MPI calls on the intercommunicator reach Isthmus::

    LD_PRELOAD=/opt/isthmus/lib/isthmus/openmpi/libisthmus.so python3 app.py

Under the preloaded library, mpi4py's ``Open_port``/``Comm.Accept``/
``Comm.Connect`` and ``Publish_name``/``Lookup_name`` work across jobs and
implementations too (see ARCHITECTURE.md), and so does
``MPI.COMM_SELF.Spawn``: the children are a job of the virtual machine,
started by the tasker of their implementation, which the info key
``isthmus_impl`` names for an interpreter (``sys.executable`` is linked
with no MPI); ``isthmus_env`` gives them variables (``PYTHONPATH`` for
their own mpi4py), in the syntax of ``env_text``::

    info = MPI.Info.Create()
    info.Set("isthmus_impl", "mpich")
    info.Set("isthmus_env", isthmus.env_text({"PYTHONPATH": "/opt/mpi4py-mpich"}))
    workers = MPI.COMM_SELF.Spawn(sys.executable, args=["worker.py"], maxprocs=4, info=info)
    # in worker.py: parent = MPI.Comm.Get_parent()

The virtual machine's own calls (PVM's): ``spawn``, ``kill``, ``signal``,
``jobs``, ``hosts``, ``add_host``, ``delete_host`` and ``events`` (the
notifications, as an iterator with a timeout)::

    job = isthmus.spawn("./worker", ranks=4)
    with isthmus.events(["task_exit", "job_exit"], jobs=[job], timeout=60) as ev:
        for e in ev:
            print(e.kind, e.rank, e.exit)
            if e.kind == "job_exit":
                break
"""

import collections
import ctypes
import os
import time

from mpi4py import MPI

__all__ = ["register", "leave", "intercomm_create", "IsthmusError", "spawn", "kill", "signal",
           "jobs", "hosts", "add_host", "delete_host", "events", "Events", "Event", "Job", "Host",
           "env_text"]


class IsthmusError(MPI.Exception):
    """An Isthmus call failed; ``str()`` is Isthmus's message."""


def _library():
    path = os.environ.get("ISTHMUS_LIBRARY")
    # None: the process's own symbols, where LD_PRELOAD put the library.
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL) if path else ctypes.CDLL(None)
    if not hasattr(lib, "Isthmus_Register"):
        raise ImportError(
            "libisthmus is not loaded: run with LD_PRELOAD=<prefix>/lib/isthmus/<mpi>/libisthmus.so "
            "(the build for mpi4py's MPI), or set ISTHMUS_LIBRARY"
        )
    return lib


_lib = _library()
# MPI_Comm is a pointer in Open MPI and an int in MPICH.
_Comm = ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) else ctypes.c_int
_lib.Isthmus_Register.argtypes = [ctypes.c_char_p, _Comm, ctypes.POINTER(ctypes.c_int)]
_lib.Isthmus_Leave.argtypes = [ctypes.c_int]
_lib.Isthmus_Intercomm_create_timeout.argtypes = [
    ctypes.c_int, ctypes.c_char_p, ctypes.c_double, ctypes.POINTER(_Comm)]
_lib.Isthmus_Intercomm_create.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Comm)]


def _to_mpi4py(out):
    """The mpi4py Intercomm for the C handle ``out``."""
    if hasattr(MPI.Intercomm, "fromhandle"):  # mpi4py >= 4
        # An MPICH handle is an int with its top bit set: pass its bits.
        value = out.value & 0xFFFFFFFF if _Comm is ctypes.c_int else out.value
        return MPI.Intercomm.fromhandle(value)
    # mpi4py 3: through the Fortran handle. MPICH's MPI_Comm_c2f is a macro
    # (its handles are the Fortran ones); Open MPI's is a function.
    if _Comm is ctypes.c_int:
        return MPI.Intercomm.f2py(out.value)
    c2f = _lib.MPI_Comm_c2f
    c2f.argtypes = [_Comm]
    c2f.restype = ctypes.c_int
    return MPI.Intercomm.f2py(c2f(out))


def _check(code):
    if code != 0:
        raise IsthmusError(code)


def register(group, comm=MPI.COMM_WORLD):
    """Registers ``comm`` under ``group`` (collective over ``comm``; instance
    = rank). Returns the handle."""
    handle = ctypes.c_int(-1)
    _check(_lib.Isthmus_Register(group.encode(), _Comm(MPI._handleof(comm)), ctypes.byref(handle)))
    return handle.value


def leave(handle):
    """Leaves the group (collective over the registered communicator)."""
    _check(_lib.Isthmus_Leave(handle))


def intercomm_create(handle, remote, timeout=None):
    """Forms an intercommunicator with the job registered as ``remote``
    (collective over both jobs); ``timeout`` in seconds (default 300 s or
    ISTHMUS_CONNECT_TIMEOUT). Returns an ``mpi4py.MPI.Intercomm``."""
    out = _Comm()
    if timeout is None:
        _check(_lib.Isthmus_Intercomm_create(handle, remote.encode(), ctypes.byref(out)))
    else:
        _check(_lib.Isthmus_Intercomm_create_timeout(
            handle, remote.encode(), float(timeout), ctypes.byref(out)))
    return _to_mpi4py(out)


# ---- The virtual machine (isthmus.h's second half) ----

_Job = ctypes.c_int64
_STATES = ("starting", "running", "exited", "failed", "killed", "lost")
_KINDS = {"host_added": 0x01, "host_deleted": 0x02, "host_failed": 0x04, "task_exit": 0x08,
          "job_exit": 0x10, "group": 0x20}
_KIND_NAMES = dict((v, k) for k, v in _KINDS.items())
_KIND_NAMES.update({0x100: "lost", 0x200: "ended"})
_CHANGES = (None, "joined", "left", "frozen", "destroyed", "member_died")


class _JobInfo(ctypes.Structure):
    _fields_ = [("id", _Job), ("ranks", ctypes.c_int), ("running", ctypes.c_int),
                ("state", ctypes.c_int), ("exit_kind", ctypes.c_int), ("exit_value", ctypes.c_int),
                ("implementation", ctypes.c_char * 32), ("host", ctypes.c_char * 256),
                ("program", ctypes.c_char * 1024)]


class _HostInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("slots", ctypes.c_int),
                ("slots_used", ctypes.c_int), ("jobs", ctypes.c_int), ("up", ctypes.c_int),
                ("taskers", ctypes.c_char * 256)]


class _Event(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("job", _Job), ("rank", ctypes.c_int),
                ("exit_kind", ctypes.c_int), ("exit_value", ctypes.c_int), ("state", ctypes.c_int),
                ("group_change", ctypes.c_int), ("instance", ctypes.c_int), ("size", ctypes.c_int),
                ("lost", ctypes.c_longlong), ("host", ctypes.c_char * 256),
                ("group", ctypes.c_char * 256), ("reason", ctypes.c_char * 512)]


_lib.Isthmus_Spawn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                               ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                               ctypes.POINTER(_Job)]
_lib.Isthmus_Kill.argtypes = [_Job]
_lib.Isthmus_Signal.argtypes = [_Job, ctypes.c_int, ctypes.c_int]
_lib.Isthmus_Jobs.argtypes = [ctypes.c_int, ctypes.POINTER(_JobInfo), ctypes.c_int,
                              ctypes.POINTER(ctypes.c_int)]
_lib.Isthmus_Hosts.argtypes = [ctypes.POINTER(_HostInfo), ctypes.c_int,
                               ctypes.POINTER(ctypes.c_int)]
_lib.Isthmus_Add_host.argtypes = [ctypes.c_char_p, ctypes.c_int]
_lib.Isthmus_Delete_host.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
_lib.Isthmus_Subscribe.argtypes = [ctypes.c_int, ctypes.POINTER(_Job), ctypes.c_int,
                                   ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
_lib.Isthmus_Event_next.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.POINTER(_Event)]
_lib.Isthmus_Unsubscribe.argtypes = [ctypes.c_int]

Job = collections.namedtuple(
    "Job", "id ranks running state exit implementation host program")
Job.__doc__ = """A job of the virtual machine. ``state``: starting, running, exited, failed,
killed or lost; ``exit``: None, ("code", n) or ("signal", n)."""
Host = collections.namedtuple("Host", "name slots slots_used jobs up taskers")
Host.__doc__ = """A host: ``up`` False while declared and waiting for its vmd; ``taskers``
the implementations it can start."""
Event = collections.namedtuple(
    "Event", "kind job rank exit state group change instance size host reason lost")
Event.__doc__ = """A notification. ``kind``: host_added, host_deleted, host_failed,
task_exit, job_exit, group; or lost (``lost`` events were dropped: more than
4096 were left unread) or ended (the stream ended; ``reason`` says why). Fields
that do not apply to the kind are None."""


def _text(b):
    return b.decode(errors="replace")


def _exit(kind, value):
    return {1: ("code", value), 2: ("signal", value)}.get(kind)


def env_text(env):
    """The ``isthmus_env`` syntax of a mapping: ``NAME=VALUE`` joined by
    ``;``, with ``;`` and ``\\`` in values escaped by ``\\``."""
    if isinstance(env, str):
        return env
    return ";".join(f"{k}={str(v).replace(chr(92), chr(92) * 2).replace(';', chr(92) + ';')}"
                    for k, v in env.items())


def _opt(s):
    return None if s is None else str(s).encode()


def spawn(program, args=(), ranks=1, implementation=None, host=None, env=None):
    """Starts ``ranks`` processes of ``program`` as a job of the virtual
    machine (its implementation read from the binary unless given; on
    ``host``, or anywhere with room; with ``env``, a mapping or an
    ``isthmus_env`` string). Returns the job id once a tasker accepted it."""
    argv = (ctypes.c_char_p * (len(args) + 1))(*[str(a).encode() for a in args], None)
    job = _Job(-1)
    _check(_lib.Isthmus_Spawn(str(program).encode(), argv, int(ranks), _opt(implementation),
                              _opt(host), _opt(None if env is None else env_text(env)),
                              ctypes.byref(job)))
    return job.value


def kill(job):
    """Kills every rank of a job of this user."""
    _check(_lib.Isthmus_Kill(int(job)))


def signal(job, signum, rank=None):
    """Sends ``signum`` to the job's ranks (or to ``rank`` only)."""
    _check(_lib.Isthmus_Signal(int(job), int(signum), -1 if rank is None else int(rank)))


def jobs(all=False):
    """This user's jobs holding slots (``all``: also those that ended
    recently), as ``Job`` tuples."""
    count = ctypes.c_int(0)
    _check(_lib.Isthmus_Jobs(int(bool(all)), None, 0, ctypes.byref(count)))
    while True:
        room = count.value + 8
        out = (_JobInfo * room)()
        _check(_lib.Isthmus_Jobs(int(bool(all)), out, room, ctypes.byref(count)))
        if count.value <= room:
            return [Job(j.id, j.ranks, j.running, _STATES[j.state], _exit(j.exit_kind, j.exit_value),
                        _text(j.implementation), _text(j.host), _text(j.program))
                    for j in out[:count.value]]


def hosts():
    """The virtual machine's hosts, as ``Host`` tuples (PVM's pvm_config)."""
    count = ctypes.c_int(0)
    _check(_lib.Isthmus_Hosts(None, 0, ctypes.byref(count)))
    while True:
        room = count.value + 8
        out = (_HostInfo * room)()
        _check(_lib.Isthmus_Hosts(out, room, ctypes.byref(count)))
        if count.value <= room:
            return [Host(_text(h.name), h.slots, h.slots_used, h.jobs, bool(h.up),
                         [t for t in _text(h.taskers).split(",") if t])
                    for h in out[:count.value]]


def add_host(name, slots=1):
    """Adds a host of ``slots`` slots (operators only)."""
    _check(_lib.Isthmus_Add_host(str(name).encode(), int(slots)))


def delete_host(name):
    """Deletes a host (operators only); returns how many of its jobs were lost."""
    lost = ctypes.c_int(0)
    _check(_lib.Isthmus_Delete_host(str(name).encode(), ctypes.byref(lost)))
    return lost.value


def _event(e):
    kind = _KIND_NAMES.get(e.kind, str(e.kind))
    exits = kind in ("task_exit", "job_exit")
    return Event(
        kind=kind,
        job=e.job if e.job >= 0 else None,
        rank=e.rank if kind == "task_exit" and e.rank >= 0 else None,
        exit=_exit(e.exit_kind, e.exit_value) if exits else None,
        state=_STATES[e.state] if kind == "job_exit" and 0 <= e.state < len(_STATES) else None,
        group=_text(e.group) or None,
        change=_CHANGES[e.group_change] if 0 < e.group_change < len(_CHANGES) else None,
        instance=e.instance if e.instance >= 0 else None,
        size=e.size if e.size >= 0 else None,
        host=_text(e.host) or None,
        reason=_text(e.reason) or None,
        lost=e.lost if kind == "lost" else None)


class Events:
    """A subscription to notifications: iterate it for ``Event``s. Each
    step waits up to ``timeout`` seconds (None: until one comes) and ends
    the iteration if none came; ``next(timeout)`` returns None instead.
    Iteration also ends after an ``ended`` event. Close it (or use it as a
    context manager) to end the subscription."""

    def __init__(self, kinds, jobs=(), group=None, timeout=None):
        mask = 0
        for k in ([kinds] if isinstance(kinds, str) else kinds):
            if k not in _KINDS:
                raise ValueError(f"unknown event kind {k!r} (known: {', '.join(_KINDS)})")
            mask |= _KINDS[k]
        ids = (_Job * max(len(jobs), 1))(*[int(j) for j in jobs])
        sub = ctypes.c_int(-1)
        _check(_lib.Isthmus_Subscribe(mask, ids, len(jobs), _opt(group), ctypes.byref(sub)))
        self._sub = sub.value
        self.timeout = timeout
        self._ended = False

    def next(self, timeout=None):
        """The next event, waiting up to ``timeout`` seconds; None if none came."""
        if self._sub is None:
            raise ValueError("the subscription is closed")
        deadline = None if timeout is None else time.monotonic() + timeout
        out = _Event()
        while True:
            # Slices of a second, so that the interpreter sees its signals.
            left = 1.0 if deadline is None else min(1.0, max(0.0, deadline - time.monotonic()))
            _check(_lib.Isthmus_Event_next(self._sub, left, ctypes.byref(out)))
            if out.kind != 0:
                return _event(out)
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        e = self.next(self.timeout)
        if e is None:
            raise StopIteration
        self._ended = e.kind == "ended"
        return e

    def close(self):
        """Ends the subscription."""
        if self._sub is not None:
            sub, self._sub = self._sub, None
            _check(_lib.Isthmus_Unsubscribe(sub))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def events(kinds=tuple(_KINDS), jobs=(), group=None, timeout=None):
    """Subscribes to notifications of ``kinds`` (host_added, host_deleted,
    host_failed, task_exit, job_exit, group), of ``jobs`` only (empty: every
    job of this user) and of ``group`` only (None: all); every event after
    this returns is kept until read. Returns an ``Events`` iterator whose
    steps wait up to ``timeout`` seconds."""
    return Events(kinds, jobs, group, timeout)
