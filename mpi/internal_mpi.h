/* What the parclust_mpi sources share: agreement on failures and the recording of messages. */
#ifndef PC_MPI_INTERNAL_H
#define PC_MPI_INTERNAL_H

#include "parclust_mpi.h"

#include <stddef.h>

/* Records this rank's failure ("rank R: " + the message) as the local pending message and returns st. */
pc_status pc__mpi_fail(pc_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* pc_mpi_agree with the pending message (or pc_last_error() for a failure of the core library). */
pc_status pc__mpi_agree(MPI_Comm comm, pc_status st);
/* The core library's message for st, prefixed with the rank, as the pending message; returns st. */
pc_status pc__mpi_core_fail(MPI_Comm comm, pc_status st, const char *what);

#endif
