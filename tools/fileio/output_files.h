/* The files of one command: the inputs no output may replace, and the outputs, which appear together
 * or not at all. A program registers both right after parsing its command line and checks them before
 * any work:
 *
 *     pcli_outputs o;
 *     char err[PCLI_OUTPUTS_ERR_SIZE];
 *     pcli_outputs_init(&o);
 *     pcli_outputs_input(&o, "the input", input);          (NULL paths are ignored)
 *     pcli_outputs_add(&o, "--labels", labels);
 *     if (pcli_outputs_check(&o, err, sizeof err)) ... report err, stop ...
 *     ... read, cluster; pcli_outputs_expect + pcli_outputs_check_room once sizes are known ...
 *     path = pcli_outputs_stage(&o, labels, err, sizeof err); write path; ...;
 *     pcli_outputs_commit(&o, err, sizeof err)
 *     (or pcli_outputs_name_target + pcli_outputs_discard when a writer failed)
 *
 * Nothing here prints: a function that fails returns -1 (or NULL) with the error in err, one line per
 * error ('\n' between lines; a failed commit that could not put a file back has one line for that
 * file and a last one for the commit), each naming the option and the file as the user gave them.
 * The caller adds its own prefix (the CLI: "parclust CMD: error: ").
 *
 * Files are compared by device and inode (stat), never by name: ./in.csv, a symbolic link to it or a
 * hard link of it are all in.csv. A writer writes to a short staging name in its target's folder
 * (".pc-PID-N" and the target's extension, which the writers read the format from), so a target
 * name as long as the filesystem allows still works and the final rename stays on one filesystem.
 *
 * What survives a crash (SIGKILL, a power cut): each staged file is written out to disk (fsync) before
 * the first rename, and each output's folder after the last, so a target holds its old file or the
 * complete new one, never a part. A run killed before its commit leaves its staging files (".pc-PID-"
 * names); pcli_outputs_check removes those of the outputs' folders that are clearly stale: our naming
 * pattern, a regular file of this user, older than a day, of a process that is no longer running.
 * A run killed in the middle of a commit of several outputs may leave some new and some old (each
 * whole). */
#ifndef PCLI_OUTPUT_FILES_H
#define PCLI_OUTPUT_FILES_H

#include <stddef.h>
#include <sys/types.h>

#define PCLI_MAX_FILES 8
/* Room for any one error of these functions: two paths, the words around them; a commit's error may
 * be longer (a line for each file it could not put back) and is cut at the buffer's end. */
#define PCLI_OUTPUTS_ERR_SIZE (2 * 4096 + 512)

typedef struct {
    const char *what;  /* how messages name it: "--labels", "the input" */
    const char *path;  /* as the user gave it */
    double min_bytes;  /* a lower bound on the output's size once known (pcli_outputs_expect); 0 unknown */
    dev_t dir_dev;     /* the filesystem of the output's folder (set by pcli_outputs_check) */
    char *staged;      /* where the writer writes, once staged */
    char *aside;       /* during a commit: the file the target held, kept until every output is in place */
    int moved, placed; /* aside is that file moved (no hard link could be made); staged renamed onto path */
    int exchanged;     /* staged and path exchanged: the file the target held is at staged until the end */
} pcli_file;

typedef struct {
    pcli_file in[PCLI_MAX_FILES], out[PCLI_MAX_FILES];
    size_t n_in, n_out;
    int overflow; /* more files than slots: a programming error, reported by pcli_outputs_check */
    /* The calls a commit makes to replace files: renameat2's RENAME_EXCHANGE (Linux; elsewhere it fails
     * with ENOSYS), rename(2) and link(2), as pcli_outputs_init sets them. tests/test_output_files.c
     * makes them fail, to see a commit put back what it had replaced. */
    int (*fs_exchange)(const char *a, const char *b);
    int (*fs_rename)(const char *from, const char *to);
    int (*fs_link)(const char *from, const char *to);
    /* Writes a file's data (or a folder's entries, dir = 1) out to disk: fsync. 0, or -1 with errno. */
    int (*fs_sync)(const char *path, int dir);
    /* The staging files found stale and removed by pcli_outputs_check (for the tests). */
    size_t stale_removed;
} pcli_outputs;

void pcli_outputs_init(pcli_outputs *o);
/* An input of the command ("the input", "the --init file"); NULL path: none. */
void pcli_outputs_input(pcli_outputs *o, const char *what, const char *path);
/* An output, by its option ("--labels"); NULL path: not asked for. */
void pcli_outputs_add(pcli_outputs *o, const char *option, const char *path);
/* Before any work: stale staging files of killed runs removed from the outputs' folders (see above);
 * each output's folder writable, the output not a directory or another non-file,
 * not one of the inputs, not another output (for a file that does not exist yet: the same folder
 * and name). 0, or -1 with the error in err. */
int pcli_outputs_check(pcli_outputs *o, char *err, size_t errsize);
/* Once known: output `path` will take at least `bytes`. Then pcli_outputs_check_room: the outputs of
 * each filesystem fit in its free space (0, or -1 with the error in err). */
void pcli_outputs_expect(pcli_outputs *o, const char *path, double bytes);
int pcli_outputs_check_room(const pcli_outputs *o, char *err, size_t errsize);
/* The name to write the registered output `target` to (created empty here, so it is this run's);
 * NULL (error in err) when it cannot be created. */
const char *pcli_outputs_stage(pcli_outputs *o, const char *target, char *err, size_t errsize);
/* Puts every staged output in place of its target. Before the first, each staged file is written out
 * to disk (fs_sync) and each target is checked again.
 * A target that exists is exchanged with its staged file (one atomic step, which keeps the old file
 * under the staging name until the end), or where the filesystem cannot exchange, kept aside (a hard
 * link, else moved) and replaced by a rename. One that fails puts back every target already replaced,
 * so a failure changes none. Once all are in place their folders are written out to disk, then the
 * old files removed. 0, or -1 with the error in err (staged files removed). */
int pcli_outputs_commit(pcli_outputs *o, char *err, size_t errsize);
/* Removes from folder dir the staging files of runs that ended without cleaning up (the rule above;
 * older than max_age_s seconds); how many were removed. */
size_t pcli_outputs_clean_stale(const char *dir, double max_age_s);
/* The pid of a staging name ".pc-PID-N..." (a file name, no folder), or 0 when name is not one. */
long pcli_outputs_staging_pid(const char *name);
void pcli_outputs_discard(pcli_outputs *o); /* removes whatever was staged */
/* A writer's error (which names the staging file) with the staging name replaced by its target's,
 * the name the user knows, into out. */
void pcli_outputs_name_target(const pcli_outputs *o, const char *err, char *out, size_t outsize);

#endif
