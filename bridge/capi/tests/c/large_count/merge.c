/*
 * tests/c/merge.c with the v/w collectives and Reduce_scatter on the merged
 * communicators through their large-count (`_c`) forms where mpi.h has them
 * (large_count_v.h).
 */
#include "../large_count_v.h"
#include "../merge.c"
