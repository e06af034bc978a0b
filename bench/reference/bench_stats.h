/* Shared timing/statistics helpers for the reference benchmarks.
 * Header-only; every driver prints
 *   RESULT <name> median_us=<f> p99_us=<f> n=<int>
 *   RESULT <name> bytes=<int> mbps=<f> n=<int>
 * on stdout. Everything else goes to stderr. */
#ifndef ISTHMUS_BENCH_STATS_H
#define ISTHMUS_BENCH_STATS_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts samples in place. Median = middle element (mean of the two middle
 * ones for even n); p99 = nearest-rank 99th percentile. */
static inline void report_latency(const char *name, double *s, int n)
{
    if (n <= 0) {
        fprintf(stderr, "report_latency(%s): no samples\n", name);
        return;
    }
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double med = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    int r = (int)((99LL * n + 99) / 100); /* ceil(0.99 n), 1-based rank */
    if (r < 1) r = 1;
    if (r > n) r = n;
    printf("RESULT %s median_us=%.3f p99_us=%.3f n=%d\n", name, med, s[r - 1], n);
    fflush(stdout);
}

/* bytes per message, total elapsed microseconds for n messages. */
static inline void report_bw(const char *name, long bytes, long n, double elapsed_us)
{
    double mbps = (double)bytes * (double)n / elapsed_us; /* bytes/us == MB/s */
    printf("RESULT %s bytes=%ld mbps=%.1f n=%ld\n", name, bytes, mbps, n);
    fflush(stdout);
}

#endif
