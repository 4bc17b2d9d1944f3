/* The files of one command (output_files.h): inputs no output may replace, outputs checked before any
 * work, staged under short names beside their targets and committed together or not at all. Errors
 * go back to the caller in err; nothing here prints. */
#define _GNU_SOURCE /* renameat2 (glibc 2.28) */
#define _POSIX_C_SOURCE 200809L

#include "output_files.h"
#include "points_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Swaps the files of two names in one step, or fails changing nothing. */
static int exchange(const char *a, const char *b)
{
#ifdef RENAME_EXCHANGE
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#else
    (void)a, (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

/* fsync of a file (opened for reading: fsync needs no more on Linux; for writing where it cannot be
 * read) or of a folder; a folder whose filesystem cannot sync one (EINVAL) counts as done. */
static int sync_path(const char *path, int dir)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
    if (fd < 0 && errno == EACCES && !dir)
        fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd), e = errno;
    close(fd);
    if (rc != 0 && dir && (e == EINVAL || e == ENOTSUP))
        rc = 0;
    errno = e;
    return rc;
}

void pcli_outputs_init(pcli_outputs *o)
{
    memset(o, 0, sizeof *o);
    o->fs_exchange = exchange;
    o->fs_rename = rename;
    o->fs_link = link;
    o->fs_sync = sync_path;
}

/* Adds a line to the error in err (a commit can have several to say); -1, as pcli_fail. */
static int add_line(char *err, size_t errsize, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int add_line(char *err, size_t errsize, const char *fmt, ...)
{
    size_t len = errsize ? strnlen(err, errsize - 1) : 0;
    if (len && len + 1 < errsize)
        err[len++] = '\n';
    if (len + 1 < errsize) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(err + len, errsize - len, fmt, args);
        va_end(args);
    }
    return -1;
}

static void add(pcli_file *files, size_t *n, int *overflow, const char *what, const char *path)
{
    if (!path)
        return;
    if (*n == PCLI_MAX_FILES) {
        *overflow = 1;
        return;
    }
    memset(&files[*n], 0, sizeof files[*n]);
    files[*n].what = what;
    files[(*n)++].path = path;
}

void pcli_outputs_input(pcli_outputs *o, const char *what, const char *path)
{
    add(o->in, &o->n_in, &o->overflow, what, path);
}

void pcli_outputs_add(pcli_outputs *o, const char *option, const char *path)
{
    add(o->out, &o->n_out, &o->overflow, option, path);
}

/* The folder of path as a name: "." for a bare name, "/" for a file at the root. -1 when too long. */
static int folder_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    int len = slash ? snprintf(dir, size, "%.*s", (int)(slash - path) + (slash == path), path) : snprintf(dir, size, ".");
    return len < 0 || (size_t)len >= size ? -1 : 0;
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Who a file is: an existing file by device and inode, one still to be made by its folder's device
 * and inode and its name there. */
typedef struct {
    dev_t dev;
    ino_t ino;
    const char *name; /* NULL for an existing file */
} identity;

static int same(const identity *a, const identity *b)
{
    return a->dev == b->dev && a->ino == b->ino && (!a->name) == (!b->name) && (!a->name || strcmp(a->name, b->name) == 0);
}

/* Checks output f: 0 with its identity, or -1 with the error in err. */
static int check_output(pcli_file *f, identity *id, char *err, size_t errsize)
{
    char dir[PATH_MAX];
    struct stat sd, st;
    if (folder_of(f->path, dir, sizeof dir))
        return pcli_fail(err, errsize, "%s '%s': %s", f->what, f->path, strerror(ENAMETOOLONG));
    int e = stat(dir, &sd) != 0 ? errno : !S_ISDIR(sd.st_mode) ? ENOTDIR : access(dir, W_OK | X_OK) != 0 ? errno : 0;
    if (e)
        return pcli_fail(err, errsize, "%s '%s': cannot write to directory '%s': %s", f->what, f->path, dir,
                         strerror(e));
    f->dir_dev = sd.st_dev;
    if (stat(f->path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return pcli_fail(err, errsize, "%s '%s': is a directory", f->what, f->path);
        if (!S_ISREG(st.st_mode)) /* a device, pipe or socket: an output replaces a file by renaming a new one onto it */
            return pcli_fail(err, errsize, "%s '%s': is not a regular file (a device, pipe or socket): give a file name",
                             f->what, f->path);
        if (access(f->path, W_OK) != 0)
            return pcli_fail(err, errsize, "%s '%s': the file may not be replaced: %s", f->what, f->path,
                             strerror(errno));
        *id = (identity){st.st_dev, st.st_ino, NULL};
        return 0;
    }
    if (errno != ENOENT) /* a name too long, a path through a file, a loop of links, ... */
        return pcli_fail(err, errsize, "%s '%s': %s", f->what, f->path, strerror(errno));
    *id = (identity){sd.st_dev, sd.st_ino, base_of(f->path)};
    return 0;
}

long pcli_outputs_staging_pid(const char *name)
{
    /* ".pc-PID-N" then nothing or '.' and anything (the extension, ".tmp.XXXXXX" of a writer, ".old") */
    if (strncmp(name, ".pc-", 4) != 0)
        return 0;
    const char *s = name + 4;
    long pid = 0;
    int digits = 0;
    for (; *s >= '0' && *s <= '9' && digits < 10; s++, digits++)
        pid = pid * 10 + (*s - '0');
    if (!digits || *s++ != '-' || pid <= 0 || pid > INT_MAX)
        return 0;
    for (digits = 0; *s >= '0' && *s <= '9'; s++)
        digits++;
    return digits && (*s == '\0' || *s == '.') ? pid : 0;
}

size_t pcli_outputs_clean_stale(const char *dir, double max_age_s)
{
    DIR *d = opendir(dir);
    size_t removed = 0;
    if (!d)
        return 0;
    time_t now = time(NULL);
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        long pid = pcli_outputs_staging_pid(e->d_name);
        struct stat st;
        if (!pid || pid == (long)getpid())
            continue;
        int len = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (len < 0 || (size_t)len >= sizeof path || lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        /* Written a day ago or more (as ls -l shows), and its run gone: a pid that runs (or that is
         * another user's: EPERM) may be that run still, or one that took its number: kept either way. */
        if (difftime(now, st.st_mtime) < max_age_s)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int pcli_outputs_check(pcli_outputs *o, char *err, size_t errsize)
{
    identity in[PCLI_MAX_FILES], out[PCLI_MAX_FILES];
    int in_exists[PCLI_MAX_FILES];
    if (o->overflow)
        return pcli_fail(err, errsize, "internal error: more than %d input or output files", PCLI_MAX_FILES);
    for (size_t j = 0; j < o->n_in; j++) {
        struct stat st;
        in_exists[j] = stat(o->in[j].path, &st) == 0; /* one that does not is the reader's to report */
        if (in_exists[j])
            in[j] = (identity){st.st_dev, st.st_ino, NULL};
    }
    for (size_t i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        if (check_output(f, &out[i], err, errsize))
            return -1;
        for (size_t j = 0; j < o->n_in; j++)
            if (in_exists[j] && same(&out[i], &in[j]))
                return pcli_fail(err, errsize, "%s '%s' is %s '%s' (the same file): refusing to overwrite an input",
                                 f->what, f->path, o->in[j].what, o->in[j].path);
        for (size_t j = 0; j < i; j++)
            if (same(&out[i], &out[j]))
                return pcli_fail(err, errsize, "%s '%s' and %s '%s' are the same file: give each output its own name",
                                 o->out[j].what, o->out[j].path, f->what, f->path);
    }
    /* Each folder once: what killed runs left there a day ago and more. */
    for (size_t i = 0; i < o->n_out; i++) {
        char dir[PATH_MAX], other[PATH_MAX];
        int seen = 0;
        if (folder_of(o->out[i].path, dir, sizeof dir))
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = folder_of(o->out[j].path, other, sizeof other) == 0 && strcmp(dir, other) == 0;
        if (!seen)
            o->stale_removed += pcli_outputs_clean_stale(dir, 24 * 3600.0);
    }
    return 0;
}

void pcli_outputs_expect(pcli_outputs *o, const char *path, double bytes)
{
    for (size_t i = 0; path && i < o->n_out; i++)
        if (strcmp(o->out[i].path, path) == 0)
            o->out[i].min_bytes = bytes;
}

static const char *size_text(double b, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    for (; b >= 1024 && u < 4; u++)
        b /= 1024;
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, units[u]);
    return buf;
}

int pcli_outputs_check_room(const pcli_outputs *o, char *err, size_t errsize)
{
    for (size_t i = 0; i < o->n_out; i++) {
        const pcli_file *f = &o->out[i];
        double need = 0;
        int first = 1, count = 0;
        for (size_t j = 0; j < o->n_out; j++)
            if (o->out[j].dir_dev == f->dir_dev && o->out[j].min_bytes > 0) {
                first &= j >= i;
                need += o->out[j].min_bytes;
                count++;
            }
        if (!first || f->min_bytes <= 0) /* each filesystem once, at its first output of known size */
            continue;
        char dir[PATH_MAX];
        struct statvfs vfs;
        if (folder_of(f->path, dir, sizeof dir) || statvfs(dir, &vfs) != 0)
            continue; /* not knowable: the writes themselves will tell */
        /* The file a target holds is freed only once the new one is in place: the new need room of their own.
         * Root may use the blocks reserved for it. */
        double avail = (double)(geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) * (double)vfs.f_frsize;
        if (need > avail) {
            char a[32], b[32];
            return pcli_fail(err, errsize, "%s '%s': no room on its filesystem: %s at least %s, %s free", f->what,
                             f->path, count > 1 ? "the outputs there need" : "it needs", size_text(need, a, sizeof a),
                             size_text(avail, b, sizeof b));
        }
    }
    return 0;
}

/* A new name ".pc-PID-N<suffix>" in the folder of target, created here (O_EXCL: no other run's file
 * is taken). NULL with errno set when it cannot be. */
static char *reserve_name(const char *target, const char *suffix, int create)
{
    static unsigned serial;
    const char *base = base_of(target);
    size_t len = (size_t)(base - target) + strlen(suffix) + 48;
    char *name = malloc(len);
    if (!name) {
        errno = ENOMEM;
        return NULL;
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        snprintf(name, len, "%.*s.pc-%ld-%u%s", (int)(base - target), target, (long)getpid(), serial++, suffix);
        if (!create)
            return name;
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            return name;
        }
        if (errno != EEXIST)
            break;
    }
    int e = errno;
    free(name);
    errno = e;
    return NULL;
}

const char *pcli_outputs_stage(pcli_outputs *o, const char *target, char *err, size_t errsize)
{
    pcli_file *f = NULL;
    for (size_t i = 0; i < o->n_out && !f; i++)
        if (!o->out[i].staged && strcmp(o->out[i].path, target) == 0)
            f = &o->out[i];
    if (!f) {
        pcli_fail(err, errsize, "internal error: output '%s' was not registered", target);
        return NULL;
    }
    /* The writers choose the format by the extension: the staging name keeps the target's. */
    const char *base = base_of(target), *dot = strrchr(base, '.');
    const char *ext = dot && strlen(dot) <= 16 ? dot : "";
    if (!(f->staged = reserve_name(target, ext, 1)))
        pcli_fail(err, errsize, "%s '%s': cannot create a file in its folder: %s", f->what, target, strerror(errno));
    return f->staged;
}

void pcli_outputs_name_target(const pcli_outputs *o, const char *err, char *out, size_t outsize)
{
    /* The writers name the staging file; the user knows only the target. */
    for (size_t i = 0; i < o->n_out; i++) {
        const char *at = o->out[i].staged ? strstr(err, o->out[i].staged) : NULL;
        if (at) {
            snprintf(out, outsize, "%.*s%s%s", (int)(at - err), err, o->out[i].path, at + strlen(o->out[i].staged));
            return;
        }
    }
    snprintf(out, outsize, "%s", err);
}

void pcli_outputs_discard(pcli_outputs *o)
{
    for (size_t i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        if (f->staged && !f->placed)
            remove(f->staged);
        free(f->staged);
        free(f->aside);
        f->staged = f->aside = NULL;
        f->placed = f->moved = 0;
    }
}

/* Puts back what the placed outputs replaced (the old file, or no file). 0, or -1 when one could not
 * be: its old file is then left where the line added to err says. */
static int roll_back(pcli_outputs *o, char *err, size_t errsize)
{
    int rc = 0;
    for (size_t i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        if (!f->placed)
            continue;
        if (f->exchanged) { /* exchanged back: the new file goes to staged, which the discard removes */
            if (o->fs_exchange(f->staged, f->path) != 0) {
                add_line(err, errsize, "%s '%s': could not be put back: %s; the file it held is kept as %s", f->what,
                         f->path, strerror(errno), f->staged);
                f->exchanged = 0; /* forgotten, and placed: the discard leaves it */
                rc = -1;
                continue;
            }
            f->exchanged = f->placed = 0;
            continue;
        }
        if (f->aside ? o->fs_rename(f->aside, f->path) != 0 : unlink(f->path) != 0) {
            add_line(err, errsize, "%s '%s': could not be put back: %s%s%s", f->what, f->path, strerror(errno),
                     f->aside ? "; the file it held is kept as " : "", f->aside ? f->aside : "");
            free(f->aside); /* forgotten, so kept */
            f->aside = NULL;
            rc = -1;
            continue;
        }
        free(f->aside);
        f->aside = NULL;
        f->placed = 0;
    }
    return rc;
}

/* What was kept aside goes: the old files exchanged to the staging names, the links made, and the
 * files moved (a name reserved but not used yet is not there). One that could not be put back was
 * forgotten by roll_back, and so stays. */
static void drop_asides(pcli_outputs *o)
{
    for (size_t i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        if (f->exchanged)
            unlink(f->staged);
        f->exchanged = 0;
        if (f->aside)
            unlink(f->aside);
        free(f->aside);
        f->aside = NULL;
        f->moved = 0;
    }
}

int pcli_outputs_commit(pcli_outputs *o, char *err, size_t errsize)
{
    size_t i;
    int e = 0;
    if (errsize)
        err[0] = '\0';
    /* 0. The new files' data on disk before any name points at them: else a power cut soon after the
     * renames could leave a target holding a file of the right size and no data (or a part). */
    for (i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        if (f->staged && o->fs_sync(f->staged, 0) != 0) {
            add_line(err, errsize, "%s '%s': cannot write the file out to disk: %s (no output was changed)", f->what,
                     f->path, strerror(errno));
            pcli_outputs_discard(o);
            return -1;
        }
    }
    /* 1. Nothing is replaced yet: each target is checked again (the run may have taken long). One
     * that exists is exchanged with its staged file, which keeps the old file under the staging name
     * for step 3 to remove, or step 2 to put back. A rename that replaces a file would do as well but
     * for ext4 (auto_da_alloc, its default), which then writes the new file out to disk inside the
     * rename: 0.05-0.2 s for 400 MB of labels. Where the filesystem cannot exchange (FAT, some
     * network filesystems; EINVAL), the file the target holds gets a second name here instead. */
    for (i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        struct stat st;
        if (!f->staged)
            continue;
        if (stat(f->path, &st) == 0 && S_ISDIR(st.st_mode)) {
            e = EISDIR;
            goto failed;
        }
        if (lstat(f->path, &st) != 0) {
            if (errno == ENOENT)
                continue;
            e = errno;
            goto failed;
        }
        if (o->fs_exchange(f->staged, f->path) == 0) {
            f->exchanged = f->placed = 1;
            /* A target made a directory since the check above is put back, as a rename onto it fails. */
            if (lstat(f->staged, &st) == 0 && S_ISDIR(st.st_mode)) {
                e = EISDIR;
                goto failed;
            }
            continue;
        } /* any failure changed nothing: the rename below reports its own */
        if (!(f->aside = reserve_name(f->path, ".old", 0))) {
            e = errno;
            goto failed;
        }
        while (o->fs_link(f->path, f->aside) != 0) { /* link() takes a symbolic link itself, as rename does */
            if (errno != EEXIST) {
                f->moved = 1; /* no hard links here (FAT, some network filesystems): moved aside in step 2 */
                break;
            }
            free(f->aside);
            if (!(f->aside = reserve_name(f->path, ".old", 0))) {
                e = errno;
                goto failed;
            }
        }
    }
    /* 2. The renames; a failure puts back what the earlier ones replaced. */
    for (i = 0; i < o->n_out; i++) {
        pcli_file *f = &o->out[i];
        if (!f->staged || f->exchanged)
            continue;
        if (f->moved && o->fs_rename(f->path, f->aside) != 0) {
            e = errno;
            free(f->aside);
            f->aside = NULL;
            goto failed;
        }
        if (o->fs_rename(f->staged, f->path) != 0) {
            e = errno;
            if (f->moved) { /* the old file is put back, or kept where the message says */
                if (o->fs_rename(f->aside, f->path) != 0)
                    add_line(err, errsize, "%s '%s': could not be put back: %s; the file it held is kept as %s",
                             f->what, f->path, strerror(errno), f->aside);
                free(f->aside);
                f->aside = NULL;
            }
            goto failed;
        }
        f->placed = 1;
    }
    /* 3. Every output is in place: the new names written out to disk (each folder once), then the old
     * files go. A folder that cannot be puts every output back, as a failed rename does. */
    for (i = 0; i < o->n_out; i++) {
        char dir[PATH_MAX], other[PATH_MAX];
        int seen = 0;
        if (!o->out[i].staged || folder_of(o->out[i].path, dir, sizeof dir))
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = o->out[j].staged && folder_of(o->out[j].path, other, sizeof other) == 0 && strcmp(dir, other) == 0;
        if (!seen && o->fs_sync(dir, 1) != 0) {
            e = errno;
            goto failed;
        }
    }
    drop_asides(o);
    for (i = 0; i < o->n_out; i++) {
        free(o->out[i].staged);
        o->out[i].staged = NULL;
        o->out[i].placed = 0;
    }
    return 0;
failed:;
    int restored = roll_back(o, err, errsize) == 0;
    add_line(err, errsize, "%s '%s': cannot replace the file: %s (%s)", o->out[i].what, o->out[i].path, strerror(e),
             restored ? "no output was changed" : "see above");
    drop_asides(o);
    pcli_outputs_discard(o);
    return -1;
}
