"""mpi4py's MPI.Comm.Join across implementations: the Python side of
tests/c/join.c, which the peer runs (tests/python.rs).

join.py listen FILE
    listens on 127.0.0.1 (a port the kernel picks), writes the port number
    to FILE, accepts one connection and joins over it.
join.py connect FILE
    waits for FILE, connects to that port and joins.
Then both: point-to-point both ways, Allreduce, Bcast with MPI.ROOT each
way, the socket still usable (one byte each way), Disconnect. Prints
"VENDOR ..." and "PASS join rank 0".
"""
import os
import socket
import sys
import time
from array import array

from mpi4py import MPI

# One write per line: with PYTHONUNBUFFERED set (as some CI environments
# do) print writes a line's text and its newline apart, and the launcher may
# put another rank's output between them.
sys.stdout.reconfigure(line_buffering=True, write_through=False)


def listen(path):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with open(path + ".tmp", "w") as f:
        f.write(f"{server.getsockname()[1]}\n")
    os.rename(path + ".tmp", path)
    sock, _ = server.accept()
    server.close()
    return sock


def connect(path):
    end = time.monotonic() + 60
    while not os.path.exists(path):
        assert time.monotonic() < end, f"no port in {path}"
        time.sleep(0.05)
    with open(path) as f:
        port = int(f.read())
    return socket.create_connection(("127.0.0.1", port))


def joined(sock, listener):
    inter = MPI.Comm.Join(sock.fileno())
    assert inter.Is_inter() and inter.Get_remote_size() == 1
    # Point-to-point both ways (C ints: the peer is C).
    if listener:
        inter.Send([array("i", [41]), MPI.INT], dest=0, tag=3)
        back = array("i", [-1])
        inter.Recv([back, MPI.INT], source=0, tag=4)
        assert back[0] == 82, back
    else:
        got = array("i", [-1])
        inter.Recv([got, MPI.INT], source=0, tag=3)
        assert got[0] == 41, got
        inter.Send([array("i", [2 * got[0]]), MPI.INT], dest=0, tag=4)
    total = array("i", [0])
    inter.Allreduce([array("i", [1000 if listener else 1]), MPI.INT], [total, MPI.INT],
                    op=MPI.SUM)
    assert total[0] == (1 if listener else 1000), total
    for turn in range(2):
        if (turn == 0) == listener:
            inter.Bcast([array("d", [2.5, -1.0 - turn]), MPI.DOUBLE], root=MPI.ROOT)
        else:
            got = array("d", [0.0, 0.0])
            inter.Bcast([got, MPI.DOUBLE], root=0)
            assert list(got) == [2.5, -1.0 - turn], got
    # The socket is left as it was: usable, nothing unread.
    sock.sendall(b"L" if listener else b"C")
    assert sock.recv(1) == (b"C" if listener else b"L")
    inter.Disconnect()
    assert inter == MPI.COMM_NULL
    sock.close()
    print(f"PASS join rank {MPI.COMM_WORLD.Get_rank()}", flush=True)


if __name__ == "__main__":
    print(f"VENDOR {MPI.get_vendor()[0]}", flush=True)
    mode, path = sys.argv[1], sys.argv[2]
    joined(listen(path) if mode == "listen" else connect(path), mode == "listen")
