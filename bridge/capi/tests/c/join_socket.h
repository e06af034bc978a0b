/* The sockets of the MPI_Comm_join tests (join_socket.c). */
#ifndef JOIN_SOCKET_H
#define JOIN_SOCKET_H

/* Listens on 127.0.0.1 (a port the kernel picks), writes the port number
 * to `file` (through a rename, so a reader never sees half of it), accepts
 * one connection: its descriptor, or -1. */
int join_listen(const char *file);

/* Waits (up to 60 s) for `file`, connects to the port it names: the
 * descriptor, or -1. */
int join_connect(const char *file);

/* Writes the byte `out`, reads one: the byte read, or -1. */
int join_swap_byte(int fd, int out);

/* Closes the descriptor. */
void join_close(int fd);

#endif
