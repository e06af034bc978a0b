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
implementations too (see ARCHITECTURE.md).
"""

import ctypes
import os

from mpi4py import MPI

__all__ = ["register", "leave", "intercomm_create", "IsthmusError"]


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
