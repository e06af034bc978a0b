/*
 * isthmus.h — join separately started MPI jobs, then use plain MPI.
 *
 * Link with libisthmus built for your MPI (pkg-config isthmus-openmpi or
 * isthmus-mpich), or preload it (LD_PRELOAD). After Isthmus_Register and
 * Isthmus_Intercomm_create, MPI's point-to-point calls on the returned
 * communicator go to the other job, whatever MPI implementation it uses.
 *
 * Every function returns an MPI error code (MPI_SUCCESS on success);
 * MPI_Error_string gives Isthmus's message for it.
 */
#ifndef ISTHMUS_H
#define ISTHMUS_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Registers comm under the group name: collective over comm; instance =
 * rank. On return the group is complete and frozen. */
int Isthmus_Register(const char *group, MPI_Comm comm, int *handle);

/* Leaves the group: collective over the registered communicator. */
int Isthmus_Leave(int handle);

/* Forms an intercommunicator with the job registered as remote_group:
 * collective over the registered communicator and over the remote group.
 * Waits up to 300 s (or ISTHMUS_CONNECT_TIMEOUT seconds). */
int Isthmus_Intercomm_create(int handle, const char *remote_group, MPI_Comm *intercomm);

/* Like Isthmus_Intercomm_create with a deadline in seconds. Fails before
 * the deadline if the remote group was registered and lost a member. */
int Isthmus_Intercomm_create_timeout(int handle, const char *remote_group, double seconds,
                                     MPI_Comm *intercomm);

/* Starts forming the intercommunicator; *intercomm is valid once request
 * completes through MPI_Test/MPI_Wait (or any of their family). */
int Isthmus_Intercomm_icreate(int handle, const char *remote_group, MPI_Comm *intercomm,
                              MPI_Request *request);

#ifdef __cplusplus
}
#endif

#endif /* ISTHMUS_H */
