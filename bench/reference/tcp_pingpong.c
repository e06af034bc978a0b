/* Raw socket floor: blocking ping-pong and streaming between two processes
 * (fork) over TCP on 127.0.0.1 (TCP_NODELAY) or a Unix domain stream socket.
 *
 * usage: tcp_pingpong tcp|unix [lat_iters [bw_scale_MiB]]   (defaults 10000 1024)
 *        tcp_pingpong serve|connect IPV4 PORT [lat_iters [bw_scale_MiB]]
 *        tcp_pingpong serve2|connect2 IPV4 PORT [lat_iters [bw_scale_MiB]]
 *   The second form runs the two sides as separate processes (e.g. in two
 *   network namespaces, bench/hosts-data.sh): `serve` listens on
 *   IPV4:PORT and answers one client; `connect` dials it (retrying for up
 *   to 20 s while nothing listens yet) and prints the tcp_* RESULT lines.
 *   The third form does the same over two one-way connections, as the
 *   bridge connects two processes (each writes on the connection it
 *   dialled or was dialled on for that direction, never reads from it):
 *   the client's messages go on the first, the server's answers on the
 *   second; it prints tcp2_* RESULT lines. Over one connection an answer
 *   carries TCP's acknowledgement of the message it answers; over two,
 *   the receiver of each message acknowledges it in a segment of its own.
 *
 * Latency: client writes <size> bytes, server reads them fully and writes
 *   them back; each round trip is timed, sample = RTT/2 (one-way). A 0-byte
 *   message does not exist on a stream socket, so the smallest size is 1 B
 *   (<proto>_lat_1).
 * Bandwidth: same scheme as ompi_connect_accept: client writes WINDOW=16
 *   messages of <size> bytes back to back, server reads them fully and
 *   answers a 1-byte ack; repeated, MB/s = size*WINDOW*reps/elapsed.
 * No spinning: plain blocking read/write.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"

#define WINDOW 16
#define LAT_WARMUP 500
#define SAFETY_ALARM_S 600

static const long lat_sizes[] = {1, 8, 1024};
static const long bw_sizes[] = {65536, 1048576, 4194304};

static void die(const char *what)
{
    fprintf(stderr, "tcp_pingpong[%d]: %s: %s\n", (int)getpid(), what, strerror(errno));
    exit(1);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            die("write");
        }
        p += w;
        n -= (size_t)w;
    }
}

static void read_all(int fd, char *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR) continue;
            die("read");
        }
        if (r == 0) {
            fprintf(stderr, "tcp_pingpong[%d]: peer closed early\n", (int)getpid());
            exit(1);
        }
        p += r;
        n -= (size_t)r;
    }
}

static long bw_reps(long size, long scale_mib)
{
    long reps = (scale_mib << 20) / (size * WINDOW);
    return reps < 4 ? 4 : reps;
}

/* Reads from `rfd`, writes to `wfd` (the same socket, or two one-way ones). */
static void run(int rfd, int wfd, int is_client, const char *proto, int iters, long scale)
{
    char *buf = malloc((size_t)bw_sizes[2]);
    double *s = malloc(sizeof(double) * (size_t)iters);
    char name[64];
    if (!buf || !s) die("malloc");
    memset(buf, 0x5a, (size_t)bw_sizes[2]);

    for (int k = 0; k < 3; k++) {
        size_t sz = (size_t)lat_sizes[k];
        for (int i = 0; i < LAT_WARMUP + iters; i++) {
            if (is_client) {
                double t0 = now_us();
                write_all(wfd, buf, sz);
                read_all(rfd, buf, sz);
                if (i >= LAT_WARMUP) s[i - LAT_WARMUP] = (now_us() - t0) / 2.0;
            } else {
                read_all(rfd, buf, sz);
                write_all(wfd, buf, sz);
            }
        }
        if (is_client) {
            snprintf(name, sizeof name, "%s_lat_%ld", proto, lat_sizes[k]);
            report_latency(name, s, iters);
        }
    }

    for (int k = 0; k < 3; k++) {
        long sz = bw_sizes[k];
        long reps = bw_reps(sz, scale);
        double t0 = 0;
        for (long r = -2; r < reps; r++) { /* 2 warm-up windows */
            if (r == 0) t0 = now_us();
            if (is_client) {
                for (int w = 0; w < WINDOW; w++) write_all(wfd, buf, (size_t)sz);
                read_all(rfd, buf, 1);
            } else {
                for (int w = 0; w < WINDOW; w++) read_all(rfd, buf, (size_t)sz);
                write_all(wfd, buf, 1);
            }
        }
        if (is_client) {
            snprintf(name, sizeof name, "%s_bw_%ld", proto, sz);
            report_bw(name, sz, reps * WINDOW, now_us() - t0);
        }
    }
    free(buf);
    free(s);
}

/* Dial IPV4:PORT, retrying for up to 20 s while nothing listens yet. */
static int dial(const struct sockaddr_in *ia)
{
    double give_up = now_us() + 20e6;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) die("socket");
        if (connect(fd, (const struct sockaddr *)ia, sizeof *ia) == 0) return fd;
        if (errno != ECONNREFUSED || now_us() > give_up) die("connect");
        close(fd);
        usleep(20000);
    }
}

static void nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("TCP_NODELAY");
}

/* serve|connect IPV4 PORT [iters [scale]]: one side in this process, over
 * one connection; serve2|connect2: over two one-way connections. */
static int split_main(int argc, char **argv)
{
    int serve = strcmp(argv[1], "serve") == 0 || strcmp(argv[1], "serve2") == 0;
    int two = strcmp(argv[1], "serve2") == 0 || strcmp(argv[1], "connect2") == 0;
    if (argc < 4) {
        fprintf(stderr, "usage: %s serve|connect|serve2|connect2 IPV4 PORT [lat_iters [bw_scale_MiB]]\n", argv[0]);
        return 2;
    }
    int iters = argc > 4 ? atoi(argv[4]) : 10000;
    long scale = argc > 5 ? atol(argv[5]) : 1024;
    struct sockaddr_in ia = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[3]))};
    if (iters <= 0 || scale <= 0 || inet_pton(AF_INET, argv[2], &ia.sin_addr) != 1) {
        fprintf(stderr, "bad address, lat_iters or bw_scale\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    alarm(SAFETY_ALARM_S);
    /* `to_server` carries the client's messages, `to_client` the answers. */
    int to_server, to_client;
    if (serve) {
        int one = 1;
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        if (lfd < 0) die("socket");
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(lfd, (struct sockaddr *)&ia, sizeof ia) < 0) die("bind");
        if (listen(lfd, 2) < 0) die("listen");
        to_server = accept(lfd, NULL, NULL);
        if (to_server < 0) die("accept");
        to_client = two ? accept(lfd, NULL, NULL) : to_server;
        if (to_client < 0) die("accept");
        close(lfd);
    } else {
        to_server = dial(&ia);
        to_client = two ? dial(&ia) : to_server;
    }
    nodelay(to_server);
    nodelay(to_client);
    if (serve)
        run(to_server, to_client, 0, "tcp", iters, scale);
    else
        run(to_client, to_server, 1, two ? "tcp2" : "tcp", iters, scale);
    close(to_server);
    if (two) close(to_client);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "serve") || !strcmp(argv[1], "connect") ||
                      !strcmp(argv[1], "serve2") || !strcmp(argv[1], "connect2")))
        return split_main(argc, argv);
    if (argc < 2 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "unix"))) {
        fprintf(stderr, "usage: %s tcp|unix [lat_iters [bw_scale_MiB]]\n", argv[0]);
        return 2;
    }
    int tcp = strcmp(argv[1], "tcp") == 0;
    int iters = argc > 2 ? atoi(argv[2]) : 10000;
    long scale = argc > 3 ? atol(argv[3]) : 1024;
    if (iters <= 0 || scale <= 0) {
        fprintf(stderr, "bad lat_iters/bw_scale\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    int lfd;
    char dir[] = "/tmp/isthmus-unix.XXXXXX";
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    struct sockaddr_in ia = {.sin_family = AF_INET};
    socklen_t alen;
    struct sockaddr *addr;
    if (tcp) {
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        if (lfd < 0) die("socket");
        ia.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ia.sin_port = 0; /* ephemeral */
        alen = sizeof ia;
        if (bind(lfd, (struct sockaddr *)&ia, alen) < 0) die("bind 127.0.0.1:0");
        if (getsockname(lfd, (struct sockaddr *)&ia, &alen) < 0) die("getsockname");
        addr = (struct sockaddr *)&ia;
    } else {
        if (!mkdtemp(dir)) die("mkdtemp");
        snprintf(ua.sun_path, sizeof ua.sun_path, "%s/sock", dir);
        lfd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (lfd < 0) die("socket");
        alen = sizeof ua;
        if (bind(lfd, (struct sockaddr *)&ua, alen) < 0) die("bind unix");
        addr = (struct sockaddr *)&ua;
    }
    if (listen(lfd, 1) < 0) die("listen");

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) { /* server */
        alarm(SAFETY_ALARM_S);
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) die("accept");
        close(lfd);
        if (tcp) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        run(fd, fd, 0, argv[1], iters, scale);
        close(fd);
        _exit(0);
    }

    alarm(SAFETY_ALARM_S);
    close(lfd);
    int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, addr, alen) < 0) die("connect");
    if (tcp) {
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("TCP_NODELAY");
    }
    run(fd, fd, 1, argv[1], iters, scale);
    close(fd);
    if (!tcp) {
        unlink(ua.sun_path);
        rmdir(dir);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0) die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "tcp_pingpong: server process failed (status 0x%x)\n", st);
        return 1;
    }
    return 0;
}
