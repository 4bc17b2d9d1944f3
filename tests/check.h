/* The project's own small assertion header: a failed check prints where and why, and the test
 * program exits non-zero at the end. Exit code 77 means "skipped" to CTest (SKIP_RETURN_CODE). */
#ifndef PC_TEST_CHECK_H
#define PC_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int pc_test_failures = 0;
static int pc_test_checks = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        pc_test_checks++;                                                             \
        if (!(cond)) {                                                                \
            pc_test_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                          \
    do {                                                                              \
        pc_test_checks++;                                                             \
        if (!(cond)) {                                                                \
            pc_test_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
        }                                                                             \
    } while (0)

/* |a - b| <= tol, with both values printed on failure. */
#define CHECK_NEAR(a, b, tol)                                                                  \
    do {                                                                                       \
        double pc__a = (double)(a), pc__b = (double)(b);                                       \
        CHECK_MSG(fabs(pc__a - pc__b) <= (double)(tol), "%s = %.9g, %s = %.9g, tol %.3g", #a, \
                  pc__a, #b, pc__b, (double)(tol));                                            \
    } while (0)

#define CHECK_STATUS(call, expected)                                                       \
    do {                                                                                   \
        pc_status pc__s = (call);                                                          \
        CHECK_MSG(pc__s == (expected), "got %s (%s)", pc_status_string(pc__s), pc_last_error()); \
    } while (0)

/* Ends main: prints a summary, returns 0 only when every check passed. */
static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, pc_test_checks, pc_test_failures);
    return pc_test_failures ? 1 : 0;
}

#endif
