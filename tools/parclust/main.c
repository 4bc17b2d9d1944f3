/* The parclust program: subcommand dispatch (the option parsing the subcommands share is args.c's). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "parclust %s: fast clustering on one core, all cores and GPUs\n"
            "\n"
            "usage: parclust COMMAND [options]   (parclust COMMAND --help for its options)\n"
            "\n"
            "commands:\n"
            "  meanshift INPUT   cluster points by mean shift\n"
            "  hca INPUT         grid-based hierarchical clustering (points or pixel rows)\n"
            "  heca INPUT        HCA over an ensemble of grids (no m to choose)\n"
            "  kmeans INPUT -k K Lloyd's k-means (kmeans++, random, k-means|| or given centres)\n"
            "  segment IMAGE     segment a raster (GeoTIFF, PNG, ... or .npy): labels as a GeoTIFF\n"
            "  generate KIND     write synthetic points (blobs, rings, agnolucci, bindi, grid, hca8, hca5)\n"
            "                    or a synthetic multispectral scene (generate scene)\n"
            "  score             compare two labelings: ARI, NMI, matched accuracy\n"
            "  info              version, backends built, threads, GPUs\n"
            "\n"
            "Points are read from CSV/TSV/space-separated text (one header line allowed) or NumPy .npy;\n"
            "outputs are written by extension (.csv/.txt/.tsv or .npy).\n",
            pc_version());
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {{"meanshift", cmd_meanshift}, {"hca", cmd_hca}, {"heca", cmd_heca}, {"kmeans", cmd_kmeans}, {"segment", cmd_segment}, {"generate", cmd_generate},
                    {"score", cmd_score},         {"info", cmd_info}};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("parclust %s\n", pc_version());
        return CLI_OK;
    }
    fprintf(stderr, "parclust: error: unknown command '%s' (see 'parclust --help')\n", cmd);
    return CLI_USAGE;
}
