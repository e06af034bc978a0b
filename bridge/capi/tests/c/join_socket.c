/* The sockets of the MPI_Comm_join tests (tests/c/join.c, and
 * tests/fortran/join.F90, which calls these through bind(C): Fortran has
 * no sockets): a loopback TCP connection whose descriptor the program
 * gives to MPI_Comm_join, and one byte each way afterwards to see that the
 * join left the socket usable. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "join_socket.h"

/* 127.0.0.1:port (0: any port). */
static struct sockaddr_in loopback(int port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
}

int join_listen(const char *file)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0) {
        close(s);
        return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        close(s);
        return -1;
    }
    fprintf(f, "%d\n", ntohs(a.sin_port));
    fclose(f);
    if (rename(tmp, file) != 0) {
        close(s);
        return -1;
    }
    int fd = accept(s, NULL, NULL);
    close(s);
    return fd;
}

int join_connect(const char *file)
{
    int port = 0;
    for (int i = 0; i < 1200 && port == 0; i++) {
        FILE *f = fopen(file, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port == 0)
            usleep(50000);
    }
    if (port == 0)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = loopback(port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int join_swap_byte(int fd, int out)
{
    char o = (char)out, in = 0;
    if (write(fd, &o, 1) != 1 || read(fd, &in, 1) != 1)
        return -1;
    return (unsigned char)in;
}

void join_close(int fd)
{
    close(fd);
}
