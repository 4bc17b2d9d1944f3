/* Status text, the thread-local detail of the last failure, and checked allocation: the pieces every
 * other file uses to fail cleanly. */
#define _DEFAULT_SOURCE /* madvise */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static _Thread_local char last_error[512];

const char *pc_status_string(pc_status status)
{
    switch (status) {
#define PC__STATUS_CASE(name, value, text) \
    case name:                             \
        return text;
        PC_STATUS_LIST(PC__STATUS_CASE)
#undef PC__STATUS_CASE
    }
    return "unknown status";
}

const char *pc_last_error(void) { return last_error; }

void pc__clear_error(void) { last_error[0] = '\0'; }

pc_status pc__fail(pc_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return status;
}

void *pc__alloc(size_t n, size_t size, const char *what)
{
    if (size != 0 && n > SIZE_MAX / size) {
        pc__fail(PC_OUT_OF_MEMORY, "%s: %zu x %zu bytes overflows the address space", what, n, size);
        return NULL;
    }
    size_t bytes = n * size;
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        pc__fail(PC_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", what, n * size);
    return p;
}

void *pc__alloc_large(size_t n, size_t size, const char *what)
{
    if (size != 0 && n > SIZE_MAX / size) {
        pc__fail(PC_OUT_OF_MEMORY, "%s: %zu x %zu bytes overflows the address space", what, n, size);
        return NULL;
    }
    size_t bytes = n * size;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* A 400 MB label array touched for the first time costs 100,000 page faults in 4 KiB pages and
     * 200 in 2 MiB ones: ask for huge pages where the kernel gives them on request. */
    if (bytes >= ((size_t)8 << 20)) {
        void *p = NULL;
        if (posix_memalign(&p, (size_t)2 << 20, bytes) == 0) {
            madvise(p, bytes, MADV_HUGEPAGE);
            return p;
        }
    }
#endif
    return pc__alloc(n, size, what);
}

void *pc__calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        pc__fail(PC_OUT_OF_MEMORY, "%s: cannot allocate %zu x %zu bytes", what, n, size);
    return p;
}

double pc__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *pc_version(void) { return PC_VERSION_STRING; }
