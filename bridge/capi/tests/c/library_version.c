/*
 * Prints the MPI library this process runs on (MPI_Get_library_version),
 * as "LIBRARY <first line>": tests/matrix.rs checks that one binary built
 * for the MPI 5.0 standard ABI runs on MPICH 5 and on Intel MPI.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Init(&argc, &argv);
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = '\0';
    printf("LIBRARY %s\n", version);
    MPI_Finalize();
    return 0;
}
