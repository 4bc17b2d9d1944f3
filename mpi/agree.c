/* Failures across ranks: a rank that fails says so in the next agreement, every rank then returns the
 * status of the lowest failing rank with its message, so that the program prints one line and all
 * ranks stop at the same step (none waits forever in a collective that another rank left). */
#include "internal_mpi.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MESSAGE_SIZE 1024

static _Thread_local char agreed[MESSAGE_SIZE];  /* pc_mpi_last_error */
static _Thread_local char pending[MESSAGE_SIZE]; /* this rank's failure, until agreed */

const char *pc_mpi_last_error(void) { return agreed; }

static int rank_of(MPI_Comm comm)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    return rank;
}

pc_status pc__mpi_fail(pc_status st, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(pending, sizeof pending, fmt, args);
    va_end(args);
    return st;
}

pc_status pc__mpi_core_fail(MPI_Comm comm, pc_status st, const char *what)
{
    const char *detail = pc_last_error()[0] ? pc_last_error() : pc_status_string(st);
    return pc__mpi_fail(st, "rank %d: %s%s%s", rank_of(comm), what ? what : "", what ? ": " : "", detail);
}

pc_status pc_mpi_agree(MPI_Comm comm, pc_status status, const char *message)
{
    int rank = rank_of(comm), size = 1;
    MPI_Comm_size(comm, &size);
    int mine = status == PC_OK ? size : rank, first = size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size) {
        agreed[0] = '\0';
        pending[0] = '\0';
        return PC_OK;
    }
    /* The lowest failing rank's status and message, on every rank. */
    int code = (int)status;
    char text[MESSAGE_SIZE];
    if (rank == first)
        snprintf(text, sizeof text, "%s", message ? message : pc_last_error()[0] ? pc_last_error()
                                                                              : pc_status_string(status));
    MPI_Bcast(&code, 1, MPI_INT, first, comm);
    MPI_Bcast(text, (int)sizeof text, MPI_CHAR, first, comm);
    text[sizeof text - 1] = '\0';
    memcpy(agreed, text, sizeof agreed);
    pending[0] = '\0';
    return (pc_status)code;
}

pc_status pc__mpi_agree(MPI_Comm comm, pc_status st)
{
    char text[MESSAGE_SIZE];
    if (st != PC_OK && !pending[0])
        pc__mpi_core_fail(comm, st, NULL);
    memcpy(text, pending, sizeof text);
    return pc_mpi_agree(comm, st, text);
}
