/*
 * Isthmus's harness for MPICH's intercommunicator tests: the MTest
 * functions those tests call, with the promises of MPICH's harness, except
 * that MTestGetIntercomm returns an intercommunicator between this job and
 * a separately started one, formed by Isthmus.
 *
 * With ISTHMUS_MTEST_MERGE=1, MTestGetIntracomm returns after
 * MPI_COMM_WORLD the MPI_Intercomm_merge of such an intercommunicator.
 *
 * Environment: ISTHMUS_MTEST_GROUP (this job's group name) and
 * ISTHMUS_MTEST_PEER (the other job's); the job whose name sorts first is
 * the left group. ISTHMUS_VMD as for any Isthmus program.
 */
#ifndef ISTHMUS_MPITEST_H
#define ISTHMUS_MPITEST_H

#include <mpi.h>
/* What MPICH's mpitest.h brings in (through mtest_common.h), which its
 * tests use without including it themselves. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* MPICH's: is the MPI standard of mpi.h at least major.minor? */
#define MTEST_HAVE_MIN_MPI_VERSION(major_, minor_) \
    ((MPI_VERSION == (major_) && MPI_SUBVERSION >= (minor_)) || (MPI_VERSION > (major_)))

void MTest_Init(int *argc, char ***argv);
void MTest_Finalize(int errs);
int MTestReturnValue(int errors);

int MTestGetIntercomm(MPI_Comm *comm, int *isLeftGroup, int min_size);
int MTestGetIntracommGeneral(MPI_Comm *comm, int min_size, int allowSmaller);
int MTestGetIntracomm(MPI_Comm *comm, int min_size);
const char *MTestGetIntracommName(void);
void MTestFreeComm(MPI_Comm *comm);
int MTestTestComm(MPI_Comm comm);
int MTestTestIntercomm(MPI_Comm comm);
int MTestTestIntracomm(MPI_Comm comm);
void MTestCommRandomize(void);
void MTestPrintfMsg(int level, const char *fmt, ...);
void MTestPrintError(int errcode);

typedef struct MTestArgList MTestArgList;
MTestArgList *MTestArgListCreate(int argc, char *argv[]);
MTestArgList *MTestArgListCreate_arg(const char *arg);
int MTestArgListGetInt_with_default(MTestArgList *head, const char *arg, int default_val);
void MTestArgListDestroy(MTestArgList *head);

#endif
