/*
 * ggufmap.c - the command line: git-style subcommands over the library,
 * and the commands about commands: help, version, completion.
 *
 * Exit statuses, one scheme for every subcommand (cli.h): 0 done, same or
 * fits; 1 usage error; 2 bad input or an I/O error; 3 a negative answer.
 */
#include <stdio.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"

static const cli_command *const commands[] = {
    &inspect_command, &plan_command, &repack_command, &hash_command, &verify_command, &load_command,
    &fit_command,
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i]->name) == 0) return commands[i];
    return NULL;
}

static void print_help(FILE *out) {
    fprintf(out,
            "usage: ggufmap <command> [options]\n"
            "\n"
            "Keeps the memory a GGUF model maps equal to the memory it needs: reads models\n"
            "as llama.cpp v0.5.0 does, predicts its buffers to the byte, plans tight\n"
            "mappings, loads and repacks models.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-17s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out,
            "  %-17s %s\n  %-17s %s\n  %-17s %s\n"
            "\n"
            "  ggufmap help COMMAND (or ggufmap COMMAND --help) shows a command's options.\n"
            "  MODEL is any shard of a split model.  Sizes take a unit: 96G, 96GiB, 96GB.\n"
            "\n"
            "exit status, every command (ggufmap help COMMAND says what each means there):\n"
            "  0    done; it fits (plan --limit, fit); the models are the same (verify)\n"
            "  1    usage error: the command line is wrong\n"
            "  2    a file cannot be read or llama.cpp would refuse it; an I/O error;\n"
            "       an architecture fit does not model; repack: an output refused, no\n"
            "       space, the read-back check failed\n"
            "  3    a negative answer: llama.cpp does not fit under the limit (plan\n"
            "       --limit, fit) or refuses the context (fit); the models differ\n"
            "       (verify); the placement given gets worse (repack)\n"
            "       (inspect, hash and load never answer 3)\n"
            "  130  interrupted by Ctrl-C (SIGINT; 143 SIGTERM, 129 SIGHUP), every\n"
            "       command; repack first removes its partial output\n",
            "help [COMMAND]", "this text, or a command's help", "version", "the version (also --version, -V)",
            "completion bash", "a bash completion script");
}

/* `ggufmap help [COMMAND | --man | --usage COMMAND]`. */
static int help(int argc, char **argv) {
    if (argc < 2) {
        print_help(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--man") == 0) {
        cli_print_man(stdout, commands, N_COMMANDS, GGUFMAP_VERSION_STRING);
        return cli_finish_stdout("help", EXIT_OK);
    }
    bool usage_only = strcmp(argv[1], "--usage") == 0 && argc > 2;
    const cli_command *cmd = find_command(argv[usage_only ? 2 : 1]);
    if (!cmd) {
        fprintf(stderr, "ggufmap help: no command '%s'; the commands are listed by 'ggufmap help'\n", argv[1]);
        return EXIT_USAGE;
    }
    if (usage_only) cli_print_usage(stdout, cmd, "");
    else cli_print_help(stdout, cmd);
    return cli_finish_stdout("help", EXIT_OK);
}

static int completion(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "bash") != 0) {
        fprintf(stderr, "ggufmap completion: expected 'bash' (ggufmap completion bash > FILE)\n");
        return EXIT_USAGE;
    }
    cli_print_bash_completion(stdout, commands, N_COMMANDS);
    return cli_finish_stdout("completion", EXIT_OK);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_help(stdout);
        return cli_finish_stdout("help", EXIT_OK);
    }
    if (strcmp(name, "help") == 0) return help(argc - 1, argv + 1);
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0 || strcmp(name, "version") == 0) {
        printf("ggufmap %s\n", GGUFMAP_VERSION_STRING);
        return cli_finish_stdout("version", EXIT_OK);
    }
    if (strcmp(name, "completion") == 0) return completion(argc - 1, argv + 1);
    const cli_command *cmd = find_command(name);
    if (cmd) return cmd->run(cmd, argc - 1, argv + 1);
    fprintf(stderr, "ggufmap: unknown command '%s'\n\n", name);
    print_help(stderr);
    return EXIT_USAGE;
}
