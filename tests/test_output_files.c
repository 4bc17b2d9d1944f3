/* Tests the commit of a command's outputs (tools/fileio/output_files.c) where the CLI cannot reach:
 * a rename that fails after others succeeded must put back every target as it was, with exchanges
 * (RENAME_EXCHANGE), without them (as on FAT), with and without hard links, and leave no staging or
 * aside file. The exchanges, renames and links of a commit go through the pcli_outputs' fs_exchange,
 * fs_rename and fs_link, which init() below points at failing versions. Usage: test_output_files DIR. */
#define _GNU_SOURCE /* renameat2 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "output_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char last_error[PCLI_OUTPUTS_ERR_SIZE];

static const char *dir;
static const char *fail_to;   /* the rename onto this target fails (EIO) */
static int renames_failed;
static int fail_put_back;     /* putting an old file back (from its .old name, or exchanged back) fails too */
static int exchanges_on;      /* 0: as a filesystem without RENAME_EXCHANGE (EINVAL) */
static int exchanges;         /* exchanges made */
static char exchanged[8][4096]; /* the targets exchanged since clear(): an exchange onto one again puts it back */
static int n_exchanged;
static const char *dir_at; /* this target is made a directory just before it is exchanged (after the check) */
static char events[64];    /* the commit's calls in order: 's' file synced, 'd' folder synced, 'x' exchange, 'r' rename */
static int sync_fails;     /* 1: syncing a file fails (EIO); 2: syncing a folder does */
static int synced_whole;   /* every file synced held its whole new text then */

static void event(char c)
{
    size_t n = strlen(events);
    if (n + 1 < sizeof events)
        events[n] = c, events[n + 1] = '\0';
}

static int failing_rename(const char *from, const char *to)
{
    event('r');
    if (fail_to && strcmp(to, fail_to) == 0 && strstr(from, ".pc-") && !strstr(from, ".old")) {
        renames_failed++;
        errno = EIO;
        return -1;
    }
    if (fail_put_back && strstr(from, ".old")) {
        errno = EACCES;
        return -1;
    }
    return rename(from, to);
}

static int test_exchange(const char *a, const char *b)
{
    event('x');
    int again = 0;
    for (int i = 0; i < n_exchanged; i++)
        again |= strcmp(exchanged[i], b) == 0;
    if (!exchanges_on || (fail_to && strcmp(b, fail_to) == 0) || (again && fail_put_back)) {
        errno = !exchanges_on ? EINVAL : again ? EACCES : EIO;
        return -1;
    }
    if (dir_at && strcmp(b, dir_at) == 0 && !again) {
        remove(b);
        mkdir(b, 0777);
    }
#ifdef RENAME_EXCHANGE
    if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0)
        return -1;
#else
    (void)a;
    errno = ENOSYS;
    return -1;
#endif
    if (!again && n_exchanged < 8)
        snprintf(exchanged[n_exchanged++], sizeof exchanged[0], "%s", b);
    exchanges++;
    return 0;
}

static int no_link(const char *from, const char *to)
{
    (void)from, (void)to;
    errno = EPERM; /* as on FAT: no hard links */
    return -1;
}

static int (*link_call)(const char *from, const char *to) = link;

static const char *text_of(const char *path);

/* Records the sync, checks a file holds its whole text ("new-" and a letter), and fails where asked. */
static int test_sync(const char *path, int is_dir)
{
    event(is_dir ? 'd' : 's');
    if (!is_dir && (strncmp(text_of(path), "new-", 4) != 0 || strlen(text_of(path)) != 5))
        synced_whole = 0;
    if (sync_fails == (is_dir ? 2 : 1)) {
        errno = EIO;
        return -1;
    }
    struct stat st;
    return stat(path, &st) == 0 && (S_ISDIR(st.st_mode) != 0) == is_dir ? 0 : -1;
}

/* pcli_outputs_init, with the commit's exchanges through test_exchange, its renames through
 * failing_rename and its links through link_call. */
static void init(pcli_outputs *o)
{
    pcli_outputs_init(o);
    o->fs_exchange = test_exchange;
    o->fs_rename = failing_rename;
    o->fs_link = link_call;
    o->fs_sync = test_sync;
    events[0] = '\0';
    synced_whole = 1;
}

/* The calls that can fail, their error kept in last_error (and shown, marked as expected). */
static int noted(int rc)
{
    if (rc)
        fprintf(stderr, "  (expected) %s\n", last_error);
    return rc;
}
#define CHECKED(call) noted(call(o, last_error, sizeof last_error))

static const char *path_of(const char *name)
{
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static void put(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fputs(text, fp);
    fclose(fp);
}

/* The file's text, or "(none)". */
static const char *text_of(const char *path)
{
    static char buf[4][256];
    static int next;
    char *b = buf[next++ % 4];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return "(none)";
    size_t n = fread(b, 1, sizeof buf[0] - 1, fp);
    b[n] = '\0';
    fclose(fp);
    return b;
}

static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static void clear(void)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            remove(path_of(e->d_name));
    if (d)
        closedir(d);
    n_exchanged = 0;
}

/* Registers, checks and stages a, b, c, writing "new-X" into each staged file. */
static int stage_three(pcli_outputs *o, const char *a, const char *b, const char *c)
{
    init(o);
    pcli_outputs_add(o, "--a", a);
    pcli_outputs_add(o, "--b", b);
    pcli_outputs_add(o, "--c", c);
    if (CHECKED(pcli_outputs_check))
        return -1;
    const char *t[3] = {a, b, c}, *text[3] = {"new-a", "new-b", "new-c"};
    for (int i = 0; i < 3; i++) {
        const char *s = pcli_outputs_stage(o, t[i], last_error, sizeof last_error);
        if (!s)
            return -1;
        put(s, text[i]);
    }
    return 0;
}

static const char *mode; /* "exchanges" or "no exchanges": added to the failures' labels */

/* a and b exist, c does not; the rename onto `failing` fails: nothing may change. */
static void rollback_case(const char *what, const char *failing)
{
    char label[128];
    snprintf(label, sizeof label, "%s, %s", mode, what);
    clear();
    const char *a = path_of("a.csv"), *b = path_of("b.npy"), *c = path_of("c.png");
    put(a, "old-a");
    put(b, "old-b");
    pcli_outputs outputs, *o = &outputs;
    CHECK(stage_three(o, a, b, c) == 0);
    fail_to = failing;
    renames_failed = 0;
    last_error[0] = '\0';
    int rc = CHECKED(pcli_outputs_commit);
    fail_to = NULL;
    CHECK_MSG(rc == -1 && renames_failed == 1, "%s: commit %d, renames failed %d", label, rc, renames_failed);
    CHECK_MSG(strcmp(text_of(a), "old-a") == 0, "%s: a holds %s", label, text_of(a));
    CHECK_MSG(strcmp(text_of(b), "old-b") == 0, "%s: b holds %s", label, text_of(b));
    CHECK_MSG(access(c, F_OK) != 0, "%s: c exists", label);
    CHECK_MSG(entries() == 2, "%s: %d files left, expected a and b only", label, entries());
    CHECK_MSG(strstr(last_error, "no output was changed") && strstr(last_error, failing) &&
                  strstr(last_error, strerror(EIO)), "%s: message '%s'", label, last_error);
}

/* Every case, with exchanges or without (exchanges_on). */
static void cases(void)
{
    mode = exchanges_on ? "exchanges" : "no exchanges";
    /* All three in place, nothing else left; a, which existed, exchanged where exchanges work. */
    clear();
    pcli_outputs outputs, *o = &outputs;
    put(path_of("a.csv"), "old-a");
    put(path_of("b.npy"), "old-b");
    CHECK(stage_three(o, path_of("a.csv"), path_of("b.npy"), path_of("c.png")) == 0);
    CHECK(strstr(o->out[1].staged, ".npy") != NULL); /* the writers read the format from the extension */
    exchanges = 0;
    CHECK(CHECKED(pcli_outputs_commit) == 0);
    CHECK_MSG(exchanges == (exchanges_on ? 2 : 0), "%s: %d exchanges", mode, exchanges);
    CHECK(strcmp(text_of(path_of("a.csv")), "new-a") == 0 && strcmp(text_of(path_of("b.npy")), "new-b") == 0 &&
          strcmp(text_of(path_of("c.png")), "new-c") == 0);
    CHECK_MSG(entries() == 3, "%s: %d files after a commit, expected 3", mode, entries());
    /* Written out to disk: the three staged files, whole, before any exchange or rename, and their one
     * folder after the last (a, b existed: exchanged, then c renamed; without exchanges, the two tried
     * and failed, then three renames). */
    CHECK_MSG(strcmp(events, exchanges_on ? "sssxxrd" : "sssxxrrrd") == 0 && synced_whole, "%s: calls %s", mode, events);

    /* A file or the folder that cannot be written out to disk: nothing changes. */
    for (sync_fails = 1; sync_fails <= 2; sync_fails++) {
        clear();
        put(path_of("a.csv"), "old-a");
        CHECK(stage_three(o, path_of("a.csv"), path_of("b.npy"), path_of("c.png")) == 0);
        CHECK(CHECKED(pcli_outputs_commit) == -1 && strstr(last_error, strerror(EIO)) &&
              strstr(last_error, "no output was changed"));
        CHECK_MSG(sync_fails == 2 || strstr(last_error, "cannot write the file out to disk"), "%s: message %s", mode,
                  last_error);
        CHECK(strcmp(text_of(path_of("a.csv")), "old-a") == 0 && access(path_of("b.npy"), F_OK) != 0);
        CHECK_MSG(entries() == 1, "%s, sync %d fails: %d files left, expected 1", mode, sync_fails, entries());
    }
    sync_fails = 0;

    /* A rename fails after one or two succeeded: those are put back (old file, or no file). */
    rollback_case("second rename fails", path_of("b.npy"));
    rollback_case("third rename fails", path_of("c.png"));
    rollback_case("first rename fails", path_of("a.csv"));
    /* Without hard links the old files are moved aside instead, and moved back. */
    link_call = no_link;
    rollback_case("no hard links, third rename fails", path_of("c.png"));
    clear();
    put(path_of("a.csv"), "old-a");
    CHECK(stage_three(o, path_of("a.csv"), path_of("b.npy"), path_of("c.png")) == 0);
    CHECK(CHECKED(pcli_outputs_commit) == 0 && strcmp(text_of(path_of("a.csv")), "new-a") == 0);
    CHECK_MSG(entries() == 3, "%s, no hard links: %d files after a commit, expected 3", mode, entries());
    link_call = link;

    /* The old a cannot be put back after b's rename failed: one line for a (where its old file is
     * kept), then the commit's own, which says to look above. */
    clear();
    put(path_of("a.csv"), "old-a");
    CHECK(stage_three(o, path_of("a.csv"), path_of("b.npy"), path_of("c.png")) == 0);
    fail_to = path_of("b.npy");
    fail_put_back = 1;
    CHECK(CHECKED(pcli_outputs_commit) == -1);
    fail_to = NULL;
    fail_put_back = 0;
    const char *nl = strchr(last_error, '\n');
    CHECK_MSG(nl && !strchr(nl + 1, '\n') && strstr(last_error, "--a '") < nl &&
                  strstr(last_error, "could not be put back") < nl && strstr(last_error, "kept as") < nl &&
                  strstr(nl, "--b '") && strstr(nl, "(see above)"), "%s, put back failed: message '%s'", mode,
              last_error);
    CHECK(strcmp(text_of(path_of("a.csv")), "new-a") == 0); /* a's new file stays, its old one is aside */
    const char *kept = strstr(last_error, "kept as ");
    char kept_path[4096];
    snprintf(kept_path, sizeof kept_path, "%.*s", kept ? (int)(nl - kept - 8) : 0, kept ? kept + 8 : "");
    CHECK_MSG(strcmp(text_of(kept_path), "old-a") == 0, "%s: '%s' holds %s", mode, kept_path, text_of(kept_path));

    /* A target that became a directory during the run: found before the first rename. */
    clear();
    put(path_of("a.csv"), "old-a");
    CHECK(stage_three(o, path_of("a.csv"), path_of("b.npy"), path_of("c.png")) == 0);
    mkdir(path_of("b.npy"), 0777);
    CHECK(CHECKED(pcli_outputs_commit) == -1 && strstr(last_error, "b.npy") && strstr(last_error, strerror(EISDIR)));
    CHECK(strcmp(text_of(path_of("a.csv")), "old-a") == 0 && access(path_of("c.png"), F_OK) != 0);
    CHECK_MSG(entries() == 2, "%s, became a directory: %d files left, expected 2", mode, entries());
    if (exchanges_on) { /* a directory since the check, exchanged: put back, and the commit fails as a rename would */
        clear();
        put(path_of("a.csv"), "old-a");
        put(path_of("b.npy"), "old-b");
        CHECK(stage_three(o, path_of("a.csv"), path_of("b.npy"), path_of("c.png")) == 0);
        dir_at = path_of("b.npy");
        CHECK(CHECKED(pcli_outputs_commit) == -1 && strstr(last_error, "b.npy") &&
              strstr(last_error, strerror(EISDIR)) && strstr(last_error, "no output was changed"));
        dir_at = NULL;
        struct stat st;
        CHECK(stat(path_of("b.npy"), &st) == 0 && S_ISDIR(st.st_mode));
        CHECK(strcmp(text_of(path_of("a.csv")), "old-a") == 0 && access(path_of("c.png"), F_OK) != 0);
        CHECK_MSG(entries() == 2, "exchanged a directory: %d files left, expected 2", entries());
    }

    /* A name of 255 bytes, the most a filesystem allows: the staging name is short whatever it is. */
    clear();
    char name[256];
    memset(name, 'n', 251);
    memcpy(name + 251, ".csv", 5);
    init(o);
    pcli_outputs_add(o, "--a", path_of(name));
    CHECK(CHECKED(pcli_outputs_check) == 0);
    const char *s = pcli_outputs_stage(o, o->out[0].path, last_error, sizeof last_error);
    CHECK(s && strlen(strrchr(s, '/') + 1) < 40);
    if (s)
        put(s, "long");
    CHECK(CHECKED(pcli_outputs_commit) == 0 && strcmp(text_of(path_of(name)), "long") == 0);
    clear();
}

/* A name of ours (".pc-PID-N...") whose run is gone and that is older than a day goes at the check;
 * anything else stays: a running pid's, a recent one, a folder, other names. */
static void stale_cases(void)
{
    clear();
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0); /* a pid no process has (until the system hands it out again) */
    long dead = (long)child, alive = (long)getppid();
    char name[128];
    struct {
        const char *fmt;
        long pid;
        int age_days, dir, gone;
    } files[] = {{".pc-%ld-3.csv", dead, 2, 0, 1},      {".pc-%ld-4.npy.tmp.AbC123", dead, 2, 0, 1},
                 {".pc-%ld-5.old", dead, 3, 0, 1},      {".pc-%ld-6", dead, 2, 0, 1},
                 {".pc-%ld-7.csv", dead, 0, 0, 0},      {".pc-%ld-8.csv", alive, 2, 0, 0},
                 {".pc-%ld-9.d", dead, 2, 1, 0},        {".pc-%ldx-1.csv", dead, 2, 0, 0},
                 {".pcx-%ld-1.csv", dead, 2, 0, 0},     {"pc-%ld-1.csv", dead, 2, 0, 0},
                 {".pc-%ld-.csv", dead, 2, 0, 0},       {".pc-%ld-12csv", dead, 2, 0, 0}};
    size_t n = sizeof files / sizeof files[0], expect_gone = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, files[i].fmt, files[i].pid);
        if (files[i].dir)
            mkdir(path_of(name), 0777);
        else
            put(path_of(name), "x");
        struct timespec t[2] = {{time(NULL) - files[i].age_days * 86400L - 60, 0}, {0, 0}};
        t[1] = t[0];
        utimensat(AT_FDCWD, path_of(name), t, 0);
        expect_gone += (size_t)files[i].gone;
    }
    CHECK(pcli_outputs_staging_pid(".pc-123-0.csv") == 123 && pcli_outputs_staging_pid(".pc-0-1") == 0 &&
          pcli_outputs_staging_pid(".pc-99999999999-1") == 0 && pcli_outputs_staging_pid(".pc-12-") == 0);
    pcli_outputs outputs, *o = &outputs;
    init(o);
    pcli_outputs_add(o, "--a", path_of("out.csv"));
    CHECK(CHECKED(pcli_outputs_check) == 0);
    CHECK_MSG(o->stale_removed == expect_gone, "stale files removed: %zu, expected %zu", o->stale_removed, expect_gone);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, files[i].fmt, files[i].pid);
        CHECK_MSG((access(path_of(name), F_OK) != 0) == files[i].gone, "%s: %s", name,
                  files[i].gone ? "left behind" : "removed");
    }
    rmdir(path_of(".pc-0-9.d"));
    snprintf(name, sizeof name, ".pc-%ld-9.d", dead);
    rmdir(path_of(name));
    clear();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_output_files DIR\n");
        return 2;
    }
    dir = argv[1];
    mkdir(dir, 0777);
#ifdef RENAME_EXCHANGE
    exchanges_on = 1;
    cases();
#endif
    exchanges_on = 0;
    cases();
    stale_cases();
    return check_report("output_files");
}
