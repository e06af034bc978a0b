/*
 * tests/c/nbcprogress.c with its nonblocking v/w collectives and
 * Ireduce_scatter through their large-count (`_c`) forms where mpi.h has
 * them (large_count_v.h).
 */
#include "../large_count_v.h"
#include "../nbcprogress.c"
