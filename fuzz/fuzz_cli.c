/* libFuzzer target: a subcommand's command line (built once a command: fuzz_cli_meanshift,
 * fuzz_cli_kmeans, ...; FUZZ_CMD names its function). The input is the arguments, separated by '\n'
 * or NUL. The command runs as `parclust CMD` would run it up to the first file it reads: the input is
 * a file that does not exist, so a command line that parses stops there (exit 1) without clustering
 * anything, having checked its options and outputs. The process works in an empty folder of its own
 * and no argument may hold '/', so every path named is a name in that folder (which holds nothing);
 * `generate`, which reads no file, gets no output option (-o, --output, --labels are dropped), so it
 * stops at "no output file" once its options are parsed. */
#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_CMD
#error "FUZZ_CMD (cmd_kmeans, ...) and FUZZ_CMD_NAME (\"kmeans\") must be defined"
#endif

int FUZZ_CMD(int argc, char **argv);

#define MAX_ARGS 32

static char folder[256];

static void remove_folder(void)
{
    if (folder[0] && chdir("/") == 0)
        rmdir(folder);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/parclust-fuzz-cli-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(folder) || chdir(folder) != 0) {
        perror("fuzz_cli: a folder of its own");
        abort();
    }
    atexit(remove_folder);
    return 0;
}

static int dropped(const char *arg)
{
    static const char *const outputs[] = {"-o", "--output", "--labels"};
    if (strcmp(FUZZ_CMD_NAME, "generate") != 0)
        return 0;
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        size_t n = strlen(outputs[i]);
        if (strncmp(arg, outputs[i], n) == 0 && (arg[n] == '\0' || arg[n] == '='))
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *argv[MAX_ARGS + 3];
    int argc = 0;
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (size_t i = 0; i < size; i++)
        if (text[i] == '/')
            text[i] = '_';
    argv[argc++] = (char *)FUZZ_CMD_NAME;
    if (strcmp(FUZZ_CMD_NAME, "generate") != 0 && strcmp(FUZZ_CMD_NAME, "score") != 0)
        argv[argc++] = (char *)"no-such-input.csv";
    for (char *s = text, *end = text + size; s <= end && argc < MAX_ARGS;) {
        char *e = s;
        while (e < end && *e != '\n' && *e != '\0')
            e++;
        *e = '\0';
        if (!dropped(s))
            argv[argc++] = s;
        s = e + 1;
    }
    argv[argc] = NULL;
    int rc = FUZZ_CMD(argc, argv);
    if (rc != CLI_OK && rc != CLI_FAILED && rc != CLI_USAGE)
        abort(); /* exit codes are 0, 1, 2 */
    free(text);
    return 0;
}
