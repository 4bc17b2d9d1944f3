/* What the fuzz targets share: the readers take paths, so each input is written to a file of this
 * process (in $TMPDIR, /dev/shm where it exists: memory, no disk) whose extension picks the format,
 * and read back through the same call the CLI makes. Files are replaced in place, never removed
 * while the process runs, and removed at exit. */
#ifndef PARCLUST_FUZZ_FILE_H
#define PARCLUST_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_paths[4][256];

static void fuzz_remove_files(void)
{
    for (int i = 0; i < 4; i++)
        if (fuzz_paths[i][0])
            unlink(fuzz_paths[i]);
}

/* The file of slot (0..3) with extension ext (".csv", ".npy", ...) holding data; its path. */
static const char *fuzz_file(int slot, const char *ext, const uint8_t *data, size_t size)
{
    static int registered;
    const char *dir = getenv("TMPDIR");
    if (!dir)
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    if (fuzz_paths[slot][0])
        unlink(fuzz_paths[slot]);
    snprintf(fuzz_paths[slot], sizeof fuzz_paths[slot], "%s/parclust-fuzz-%ld-%d%s", dir, (long)getpid(), slot, ext);
    if (!registered) {
        atexit(fuzz_remove_files);
        registered = 1;
    }
    FILE *fp = fopen(fuzz_paths[slot], "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) {
        perror(fuzz_paths[slot]);
        abort(); /* not the code under test: stop rather than fuzz nothing */
    }
    return fuzz_paths[slot];
}

#endif
