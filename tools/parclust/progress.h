/* A progress line on stderr for runs longer than about a second, only when stderr is a terminal. */
#ifndef PARCLUST_PROGRESS_H
#define PARCLUST_PROGRESS_H

typedef struct {
    const char *what;
    double start;
    int shown;
    int enabled;
} cli_progress;

double cli_seconds(void); /* monotonic clock */

void cli_progress_start(cli_progress *p, const char *what);
/* A pc_progress_fn: user is the cli_progress. Never cancels. */
int cli_progress_update(void *user, double fraction);
void cli_progress_end(cli_progress *p);

#endif
