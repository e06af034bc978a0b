/*
 * The `main` of MPICH's tests written as `int run(const char *arg)`
 * (reference/run_mpitests.c, without MULTI_TESTS): the harness starts,
 * the test runs with its arguments joined by spaces, and MTest_Finalize
 * reports " No Errors" when no rank of the job saw one.
 */
#include <string.h>

#include "mpitest.h"

int run(const char *arg);

int main(int argc, char **argv)
{
    char args[1024];
    size_t n = 0;
    int errs;
    args[0] = '\0';
    for (int i = 1; i < argc; i++) {
        size_t len = strlen(argv[i]);
        if (n + len + 2 > sizeof args)
            break;
        if (n > 0)
            args[n++] = ' ';
        memcpy(args + n, argv[i], len);
        n += len;
        args[n] = '\0';
    }
    MTest_Init(&argc, &argv);
    errs = run(args);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
