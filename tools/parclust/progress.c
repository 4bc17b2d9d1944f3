/* The progress line: drawn with carriage returns, erased at the end, silent when stderr is a file
 * or a pipe (logs stay clean). */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double cli_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_start(cli_progress *p, const char *what)
{
    p->what = what;
    p->start = cli_seconds();
    p->shown = 0;
    p->enabled = isatty(STDERR_FILENO);
}

int cli_progress_update(void *user, double fraction)
{
    cli_progress *p = user;
    if (!p->enabled)
        return 0;
    double elapsed = cli_seconds() - p->start;
    if (elapsed < 1.0)
        return 0;
    fprintf(stderr, "\r%s: %3.0f%% (%.1f s)", p->what, 100.0 * fraction, elapsed);
    fflush(stderr);
    p->shown = 1;
    return 0;
}

void cli_progress_end(cli_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r\033[K");
    p->shown = 0;
}
