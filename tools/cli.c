/*
 * cli.c - the option tables of cli.h turned into a parser, --help, a man
 * page, a bash completion script and usage lines.
 *
 * A table entry's "names" field lists its spellings ("-ngl, --n-gpu-layers",
 * "-o, --output").  A one-letter spelling is a short option (its code is the
 * letter); every other spelling is a long option, which getopt_long_only
 * takes with one dash or two, as llama.cpp's own parser does ("-ngl",
 * "--ngl", "--n-gpu-layers=4").
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufmap/report.h"
#include "cli.h"

#define HELP_WIDTH 80   /* columns of --help */
#define HELP_COLUMN 28  /* where an option's description starts */

static const cli_option help_option = {OPT_HELP, "-h, --help", NULL, NULL, "this text"};

/* ------------------------------------------------------------------------ */
/* Messages and shared options                                               */
/* ------------------------------------------------------------------------ */

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "ggufmap %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'ggufmap %s --help'.\n", cmd);
    return EXIT_USAGE;
}

int cli_fail(const char *cmd, int status, const char *message) {
    fprintf(stderr, "ggufmap %s: ", cmd);
    ggufmap_fputs_escaped(stderr, message, strlen(message));
    fputc('\n', stderr);
    return status;
}

int cli_finish_stdout(const char *cmd, int rc) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    fprintf(stderr, "ggufmap %s: cannot write standard output: %s\n", cmd,
            errno ? strerror(errno) : "write error");
    return EXIT_BAD_INPUT;
}

bool cli_color(const char *mode, int fd) {
    if (strcmp(mode, "always") == 0) return true;
    if (strcmp(mode, "never") == 0) return false;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(fd) && !(no_color && *no_color) && !(term && strcmp(term, "dumb") == 0);
}

void cli_common_apply(cli_common *c, int code, bool *handled) {
    *handled = true;
    switch (code) {
    case OPT_QUIET: c->quiet = true; break;
    case OPT_JSON: c->json = true; break;
    case OPT_PROGRESS: c->progress = 1; break;
    case OPT_NO_PROGRESS: c->progress = 0; break;
    default: *handled = false;
    }
}

bool cli_progress_on(const cli_common *c) {
    if (c->progress >= 0) return c->progress == 1;
    return !c->quiet && isatty(STDERR_FILENO);
}

/* ------------------------------------------------------------------------ */
/* Spellings                                                                 */
/* ------------------------------------------------------------------------ */

/* The k-th spelling of names into buf without its dashes; returns the dash
 * count (1 or 2), or 0 when there is no k-th spelling. */
static int spelling(const char *names, int k, char *buf, size_t cap) {
    const char *s = names;
    for (int i = 0; i < k && s; i++) {
        s = strstr(s, ", ");
        if (s) s += 2;
    }
    if (!s || !*s) return 0;
    const char *end = strstr(s, ", ");
    size_t n = end ? (size_t)(end - s) : strlen(s);
    int dashes = n > 1 && s[1] == '-' ? 2 : 1;
    snprintf(buf, cap, "%.*s", (int)(n - (size_t)dashes), s + dashes);
    return dashes;
}

/* The first spelling as written ("-ngl", "--device"). */
static void first_spelling(const cli_option *o, char *buf, size_t cap) {
    const char *end = strstr(o->names, ", ");
    snprintf(buf, cap, "%.*s", (int)(end ? (size_t)(end - o->names) : strlen(o->names)), o->names);
}

static const cli_option *option_of(const cli_command *cmd, int code) {
    for (size_t g = 0; g < cmd->n_groups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n_options; i++)
            if (cmd->groups[g]->options[i].code == code) return &cmd->groups[g]->options[i];
    return code == OPT_HELP ? &help_option : NULL;
}

/* Calls fn for every option of cmd, --help last. */
static void each_option(const cli_command *cmd, void (*fn)(const cli_option *o, void *ctx), void *ctx) {
    for (size_t g = 0; g < cmd->n_groups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n_options; i++) fn(&cmd->groups[g]->options[i], ctx);
    fn(&help_option, ctx);
}

/* ------------------------------------------------------------------------ */
/* The parser                                                                */
/* ------------------------------------------------------------------------ */

typedef struct getopt_tables {
    struct option *longopts;
    size_t n_long, cap_long;
    char *names;          /* the long names, NUL-separated (longopts point into it) */
    size_t names_used, names_cap;
    char shorts[128];
} getopt_tables;

static void add_spellings(const cli_option *o, void *ctx) {
    getopt_tables *t = ctx;
    char name[64];
    int dashes;
    for (int k = 0; (dashes = spelling(o->names, k, name, sizeof name)) != 0; k++) {
        size_t len = strlen(name);
        if (dashes == 1 && len == 1) {
            assert(o->code == name[0]); /* getopt returns a short option's letter, not its code */
            size_t used = strlen(t->shorts);
            if (used + 3 < sizeof t->shorts) snprintf(t->shorts + used, 3, "%c%s", name[0], o->arg ? ":" : "");
            continue;
        }
        /* count_spellings sized both tables for every spelling */
        memcpy(t->names + t->names_used, name, len + 1);
        t->longopts[t->n_long++] = (struct option){t->names + t->names_used, o->arg ? required_argument : no_argument,
                                                   NULL, o->code};
        t->names_used += len + 1;
    }
}

static void count_spellings(const cli_option *o, void *ctx) {
    size_t *n = ctx;
    char name[64];
    for (int k = 0; spelling(o->names, k, name, sizeof name); k++) n[0]++;
    n[1] += strlen(o->names) + 1; /* their bytes, each NUL-terminated where a ", " was */
}

/* "--p": the long names it is a prefix of, when more than one. */
static bool ambiguous(const getopt_tables *t, const char *typed, char *list, size_t cap) {
    const char *s = typed + strspn(typed, "-");
    size_t n = strcspn(s, "="), hits = 0, used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < t->n_long; i++) {
        if (strncmp(t->longopts[i].name, s, n) != 0) continue;
        if (strlen(t->longopts[i].name) == n) return false; /* an exact name */
        used += (size_t)snprintf(list + used, used < cap ? cap - used : 0, "%s--%s", hits++ ? ", " : "",
                                 t->longopts[i].name);
    }
    return hits > 1;
}

/* What went wrong with argv[optind - 1], said the same way by every command. */
static int parse_error(const cli_command *cmd, const getopt_tables *t, int c, char **argv) {
    const char *typed = argv[optind - 1];
    const cli_option *o = optopt ? option_of(cmd, optopt) : NULL;
    char list[512];
    if (c == ':' && o) return cli_usage_error(cmd->name, "%.*s needs a value (%s)", (int)strcspn(typed, "="), typed, o->arg);
    if (o && !o->arg && strchr(typed, '='))
        return cli_usage_error(cmd->name, "%.*s takes no value", (int)strcspn(typed, "="), typed);
    if (optopt && optopt < 128 && !o) return cli_usage_error(cmd->name, "unknown option '-%c'", optopt);
    if (ambiguous(t, typed, list, sizeof list))
        return cli_usage_error(cmd->name, "option '%s' is ambiguous: %s", typed, list);
    return cli_usage_error(cmd->name, "unknown option '%s'", typed);
}

/* The operand count: want operands, named as in cmd->operands. */
static int check_operands(const cli_command *cmd, int argc, int first_operand, int want) {
    int got = argc - first_operand;
    if (got == want || want == CLI_ANY_OPERANDS) return EXIT_OK;
    if (got == 0) return cli_usage_error(cmd->name, "no %s given", cmd->operands);
    return cli_usage_error(cmd->name, "expected %s, got %d operand%s", cmd->operands, got, got == 1 ? "" : "s");
}

int cli_parse_status(const cli_command *cmd, int rc) { return rc == CLI_HELPED ? cli_finish_stdout(cmd->name, EXIT_OK) : rc; }

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_apply_fn apply, void *ctx, int n_operands,
              int *first_operand) {
    size_t sizes[2] = {0, 0};
    each_option(cmd, count_spellings, sizes);
    getopt_tables t = {0};
    t.cap_long = sizes[0] + 1;
    t.names_cap = sizes[1];
    t.longopts = calloc(t.cap_long, sizeof *t.longopts);
    t.names = malloc(t.names_cap);
    if (!t.longopts || !t.names) {
        free(t.longopts);
        free(t.names);
        return cli_usage_error(cmd->name, "out of memory");
    }
    t.shorts[0] = ':'; /* a missing value returns ':' */
    each_option(cmd, add_spellings, &t);
    int c, rc = EXIT_OK;
    optind = 1;
    opterr = 0;
    while (rc == EXIT_OK && (c = getopt_long_only(argc, argv, t.shorts, t.longopts, NULL)) != -1) {
        if (c == OPT_HELP) {
            cli_print_help(stdout, cmd);
            rc = CLI_HELPED;
        } else if (c == ':' || c == '?') {
            rc = parse_error(cmd, &t, c, argv);
        } else {
            rc = apply(ctx, c, optarg);
        }
    }
    *first_operand = optind;
    free(t.longopts);
    free(t.names);
    return rc == EXIT_OK ? check_operands(cmd, argc, optind, n_operands) : rc;
}

/* ------------------------------------------------------------------------ */
/* --help                                                                    */
/* ------------------------------------------------------------------------ */

/* Writes text word by word from column col, breaking before width and
 * starting continued lines at column indent.  Returns the column reached. */
static int wrap(FILE *out, const char *text, size_t len, int col, int indent, int width) {
    const char *s = text, *end = text + len;
    while (s < end) {
        while (s < end && *s == ' ') s++;
        const char *w = s;
        while (s < end && *s != ' ') s++;
        int n = (int)(s - w);
        if (n == 0) break;
        if (col > indent && col + 1 + n > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(w, 1, (size_t)n, out);
        col += n;
    }
    return col;
}

/* Paragraphs ("\n\n"-separated) wrapped at indent; lines starting with two
 * spaces printed as they are. */
static void print_paragraphs(FILE *out, const char *text, int indent) {
    const char *s = text;
    while (*s) {
        const char *end = strstr(s, "\n\n");
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (s[0] == ' ' && s[1] == ' ') {
            fprintf(out, "%.*s\n", (int)n, s);
        } else {
            fprintf(out, "%*s", indent, "");
            wrap(out, s, n, indent, indent, HELP_WIDTH);
            fputc('\n', out);
        }
        s += n;
        if (*s) {
            fputc('\n', out);
            s += 2;
        }
    }
}

static void print_option(FILE *out, const cli_option *o) {
    char head[160];
    snprintf(head, sizeof head, "  %s%s%s", o->names, o->arg ? " " : "", o->arg ? o->arg : "");
    int col = fprintf(out, "%s", head);
    if (col + 2 > HELP_COLUMN) {
        fprintf(out, "\n%*s", HELP_COLUMN, "");
    } else {
        fprintf(out, "%*s", HELP_COLUMN - col, "");
    }
    wrap(out, o->help, strlen(o->help), HELP_COLUMN, HELP_COLUMN, HELP_WIDTH);
    fputc('\n', out);
}

/* One synopsis item: "[-ngl N|all]". */
static int synopsis_item(const cli_option *o, char *buf, size_t cap) {
    char first[64];
    first_spelling(o, first, sizeof first);
    return snprintf(buf, cap, "[%s%s%s]", first, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cli_print_usage(FILE *out, const cli_command *cmd, const char *prefix) {
    int indent = fprintf(out, "%sggufmap %s ", prefix, cmd->name);
    int col = indent + fprintf(out, "%s", cmd->operands);
    char item[160];
    for (size_t g = 0; g < cmd->n_groups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n_options; i++) {
            int n = synopsis_item(&cmd->groups[g]->options[i], item, sizeof item);
            if (col + 1 + n > HELP_WIDTH) {
                fprintf(out, "\n%*s", indent, "");
                col = indent + fprintf(out, "%s", item);
            } else {
                col += fprintf(out, " %s", item);
            }
        }
    fputc('\n', out);
}

static void print_status(FILE *out, const cli_command *cmd) {
    const char *meaning[4] = {cmd->status_ok, "usage error", cmd->status_bad, cmd->status_no};
    fprintf(out, "\nexit status:\n");
    for (int i = 0; i < 4; i++) {
        if (!meaning[i]) continue;
        fprintf(out, "  %d  ", i);
        wrap(out, meaning[i], strlen(meaning[i]), 5, 5, HELP_WIDTH);
        fputc('\n', out);
    }
    fprintf(out, "  130  interrupted (Ctrl-C, SIGINT; 143 SIGTERM, 129 SIGHUP): nothing partial is left\n");
}

void cli_print_help(FILE *out, const cli_command *cmd) {
    cli_print_usage(out, cmd, "usage: ");
    fputc('\n', out);
    print_paragraphs(out, cmd->description, 0);
    for (size_t g = 0; g < cmd->n_groups; g++) {
        fprintf(out, "\n%s:\n", cmd->groups[g]->title ? cmd->groups[g]->title : "options");
        for (size_t i = 0; i < cmd->groups[g]->n_options; i++) print_option(out, &cmd->groups[g]->options[i]);
    }
    if (cmd->n_groups == 0) fprintf(out, "\noptions:\n");
    print_option(out, &help_option);
    print_status(out, cmd);
}

/* ------------------------------------------------------------------------ */
/* The man page                                                              */
/* ------------------------------------------------------------------------ */

/* Text for roff: backslashes as \e, every '-' as \- (a minus sign, so a
 * copied option works), a line never starting with '.' or '\''. */
static void roff_text(FILE *out, const char *s, size_t n) {
    bool line_start = true;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (line_start && (ch == '.' || ch == '\'')) fputs("\\&", out);
        if (ch == '\\') fputs("\\e", out);
        else if (ch == '-') fputs("\\-", out);
        else fputc(ch, out);
        line_start = ch == '\n';
    }
}

static void roff(FILE *out, const char *s) { roff_text(out, s, strlen(s)); }

static void man_paragraphs(FILE *out, const char *text) {
    const char *s = text;
    while (*s) {
        const char *end = strstr(s, "\n\n");
        size_t n = end ? (size_t)(end - s) : strlen(s);
        bool example = s[0] == ' ' && s[1] == ' ';
        fputs(example ? ".PP\n.nf\n" : ".PP\n", out);
        roff_text(out, s, n);
        fputs(example ? "\n.fi\n" : "\n", out);
        s += n;
        if (*s) s += 2;
    }
}

static void man_option(const cli_option *o, void *ctx) {
    FILE *out = ctx;
    fputs(".TP\n.B ", out);
    roff(out, o->names);
    if (o->arg) {
        fputs(" \\fI", out);
        roff(out, o->arg);
        fputs("\\fR", out);
    }
    fputc('\n', out);
    roff(out, o->help);
    fputc('\n', out);
}

static void man_command(FILE *out, const cli_command *cmd) {
    fprintf(out, ".SS \"ggufmap %s ", cmd->name);
    roff(out, cmd->operands);
    fputs(" [options]\"\n", out);
    man_paragraphs(out, cmd->description);
    for (size_t g = 0; g < cmd->n_groups; g++) {
        fputs(".PP\n\\fB", out);
        roff(out, cmd->groups[g]->title ? cmd->groups[g]->title : "options");
        fputs(":\\fR\n", out);
        for (size_t i = 0; i < cmd->groups[g]->n_options; i++) man_option(&cmd->groups[g]->options[i], out);
    }
    man_option(&help_option, out);
    fputs(".PP\nExit status: 0 ", out);
    roff(out, cmd->status_ok);
    fputs("; 1 usage error; 2 ", out);
    roff(out, cmd->status_bad);
    if (cmd->status_no) {
        fputs("; 3 ", out);
        roff(out, cmd->status_no);
    }
    fputs("; 130 interrupted (Ctrl-C, SIGINT; 143 SIGTERM, 129 SIGHUP).\n", out);
}

void cli_print_man(FILE *out, const cli_command *const *cmds, size_t n, const char *version) {
    fprintf(out, ".\\\" Generated by 'ggufmap help --man' from the option tables in tools/; do not edit.\n");
    fprintf(out, ".TH GGUFMAP 1 \"\" \"ggufmap %s\" \"User Commands\"\n", version);
    fputs(".SH NAME\nggufmap \\- keep the memory a GGUF model maps equal to the memory it needs\n", out);
    fputs(".SH SYNOPSIS\n", out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, ".B ggufmap %s\n", cmds[i]->name);
        fputs(".I ", out);
        roff(out, cmds[i]->operands);
        fputs("\n[\\fIoptions\\fR]\n.br\n", out);
    }
    fputs(".B ggufmap help\n[\\fIcommand\\fR]\n.br\n.B ggufmap version\n(also \\fB\\-\\-version\\fR, \\fB\\-V\\fR)\n.br\n"
          ".B ggufmap completion\n.I bash\n",
          out);
    fputs(".SH DESCRIPTION\n"
          "llama.cpp maps model weights straight from a GGUF file: for each buffer type and file one span, from "
          "the lowest to the highest offset of that buffer's tensors, whatever lies in between.  On Apple Metal "
          "the span is wired and counts against the GPU working-set limit.  \\fBggufmap\\fR reads GGUF files "
          "exactly as llama.cpp v0.5.0 does, predicts the buffers llama.cpp will create, plans tight mappings, "
          "loads models that way, and repacks them so that llama.cpp itself maps nothing foreign.\n"
          ".PP\nMODEL is any shard of a split model (\\fINAME\\-0000k\\-of\\-0000n.gguf\\fR): every shard is found. "
          "Sizes take a unit: 96G or 96GiB (binary), 96GB (decimal), 16K, 512M.\n",
          out);
    fputs(".SH COMMANDS\n", out);
    for (size_t i = 0; i < n; i++) man_command(out, cmds[i]);
    fputs(".SH EXIT STATUS\n.TP\n.B 0\ndone; it fits (plan \\-\\-limit, fit); the models are the same (verify)\n"
          ".TP\n.B 1\nusage error: the command line is wrong\n"
          ".TP\n.B 2\na file cannot be read or llama.cpp would refuse it; an I/O error; an architecture fit does not "
          "model; repack: an output refused, no space, the read-back check failed, interrupted\n"
          ".TP\n.B 3\na negative answer: llama.cpp does not fit under the limit (plan \\-\\-limit, fit) or refuses the "
          "context (fit); the models differ (verify); inspect, repack, hash and load never answer 3\n",
          out);
    fputs(".SH ENVIRONMENT\n.TP\n.B NO_COLOR\nwhen set and not empty, no colours unless \\-\\-color always\n"
          ".TP\n.B TMPDIR\nwhere repack evaluates candidate layouts (their headers only)\n",
          out);
    fputs(".SH SEE ALSO\nThe README and docs/ of ggufmap; llama.cpp (https://github.com/ggml\\-org/llama.cpp).\n", out);
}

/* ------------------------------------------------------------------------ */
/* Bash completion                                                           */
/* ------------------------------------------------------------------------ */

static void bash_spellings(FILE *out, const char *names) {
    char name[64];
    int dashes;
    for (int k = 0; (dashes = spelling(names, k, name, sizeof name)) != 0; k++)
        fprintf(out, "%s%s%s", k ? "|" : "", dashes == 2 ? "--" : "-", name);
}

static void bash_value_case(const cli_option *o, void *ctx) {
    FILE *out = ctx;
    if (!o->arg) return;
    fputs("      ", out);
    bash_spellings(out, o->names);
    if (!o->complete) fputs(") return ;;\n", out);
    else if (strcmp(o->complete, "@file") == 0) fputs(") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", out);
    else fprintf(out, ") COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n", o->complete);
}

static void bash_option_words(const cli_option *o, void *ctx) {
    FILE *out = ctx;
    char name[64];
    int dashes;
    for (int k = 0; (dashes = spelling(o->names, k, name, sizeof name)) != 0; k++)
        fprintf(out, " %s%s", dashes == 2 ? "--" : "-", name);
}

void cli_print_bash_completion(FILE *out, const cli_command *const *cmds, size_t n) {
    fputs("# bash completion for ggufmap.  Generated by 'ggufmap completion bash' from the\n"
          "# option tables in tools/; do not edit.\n"
          "_ggufmap() {\n"
          "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "  COMPREPLY=()\n"
          "  if ((COMP_CWORD == 1)); then\n"
          "    COMPREPLY=($(compgen -W '",
          out);
    for (size_t i = 0; i < n; i++) fprintf(out, "%s ", cmds[i]->name);
    fputs("help version completion --help --version -V' -- \"$cur\"))\n    return\n  fi\n"
          "  case ${COMP_WORDS[1]} in\n",
          out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %s)\n    case $prev in\n", cmds[i]->name);
        each_option(cmds[i], bash_value_case, out);
        fputs("    esac\n    if [[ $cur == -* ]]; then\n      COMPREPLY=($(compgen -W '", out);
        each_option(cmds[i], bash_option_words, out);
        fputs("' -- \"$cur\"))\n    fi\n    ;;\n", out);
    }
    fputs("  help) ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W '", out);
    for (size_t i = 0; i < n; i++) fprintf(out, "%s ", cmds[i]->name);
    fputs("' -- \"$cur\")) ;;\n"
          "  completion) ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W 'bash' -- \"$cur\")) ;;\n"
          "  esac\n"
          "}\n"
          "complete -o default -F _ggufmap ggufmap\n",
          out);
}
