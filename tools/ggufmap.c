/*
 * ggufmap.c - the command line: git-style subcommands over the library.
 *
 * Exit statuses (every subcommand): 0 done, 1 usage error, 2 bad input (a
 * file that cannot be read or that llama.cpp would refuse).
 */
#include <stdio.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "util.h"

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"inspect", cmd_inspect, "list a model's shards, metadata and tensors (text or JSON)"},
    {"plan", cmd_plan, "predict llama.cpp's buffers for a placement and plan tight mappings"},
    {"repack", cmd_repack, "rewrite a model so that llama.cpp maps nothing foreign"},
    {"hash", cmd_hash, "SHA-256 of every tensor and an order-free model digest"},
    {"verify", cmd_verify, "do two models hold the same tensors and metadata?"},
    {"load", cmd_load, "map a model as planned and measure its residency"},
    {"fit", cmd_fit, "all the memory a llama.cpp run needs, per device, and the largest context that fits"},
};

static void print_help(FILE *out) {
    fprintf(out,
            "usage: ggufmap <command> [options] [--help]\n"
            "\n"
            "Keeps the memory a GGUF model maps equal to the memory it needs.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "  ggufmap <command> --help   shows a command's options\n"
            "  ggufmap --version          prints the version\n"
            "\n"
            "exit status: 0 done, 1 usage error, 2 bad input\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_help(stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("ggufmap %s\n", GGUFMAP_VERSION_STRING);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ggufmap: unknown command '%s'\n\n", name);
    print_help(stderr);
    return EXIT_USAGE;
}
