// probe.cpp - what std::regex makes of each pattern of the corpus, in the
// C++ library this file is compiled against (g++: libstdc++; clang++
// -stdlib=libc++: libc++).  tests/regex/check.sh compiles it and compares
// its output with regex-driver's (our engine) line by line.
//
// usage: probe PATTERNS NAMES
// For pattern i (0-based, in file order) one line:
//   i ok BITS        std::regex accepted it; BITS has one character per
//                    name: 1 regex_search found it, 0 not, C the search
//                    threw error_complexity
//   i reject CODE    the constructor threw regex_error CODE (error_paren, ...)
//   i hang           no answer within the time limit (or the process died:
//                    libstdc++ backtracks without limit and recurses)
// Each pattern runs in a child process with a time limit of its own.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "corpus_text.h"

static const char *code_name(std::regex_constants::error_type c) {
    using namespace std::regex_constants;
    static const struct { error_type code; const char *name; } names[] = {
        {error_collate, "error_collate"},     {error_ctype, "error_ctype"},     {error_escape, "error_escape"},
        {error_backref, "error_backref"},     {error_brack, "error_brack"},     {error_paren, "error_paren"},
        {error_brace, "error_brace"},         {error_badbrace, "error_badbrace"}, {error_range, "error_range"},
        {error_space, "error_space"},         {error_badrepeat, "error_badrepeat"},
        {error_complexity, "error_complexity"}, {error_stack, "error_stack"},
    };
    for (const auto &n : names)
        if (n.code == c) return n.name;
    return "error_parse"; // libc++'s own: the parser did not consume the whole pattern
}

static std::string answer(const std::string &pattern, const std::vector<std::string> &names) {
    try {
        std::regex re(pattern);
        std::string bits;
        for (const auto &n : names) {
            try {
                bits += std::regex_search(n, re) ? '1' : '0';
            } catch (const std::regex_error &e) {
                bits += e.code() == std::regex_constants::error_complexity ? 'C' : '?';
            }
        }
        return "ok " + bits;
    } catch (const std::regex_error &e) {
        return std::string("reject ") + code_name(e.code());
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: probe PATTERNS NAMES\n");
        return 2;
    }
    std::vector<std::string> patterns, names;
    if (!corpus_read(argv[1], 'P', patterns) || !corpus_read(argv[2], 'N', names)) return 2;
    unsigned limit = getenv("PROBE_SECONDS") ? (unsigned)atoi(getenv("PROBE_SECONDS")) : 3;
    for (size_t i = 0; i < patterns.size(); i++) {
        int fd[2];
        if (pipe(fd) != 0) return 2;
        std::fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fd[0]);
            alarm(limit);
            std::string a = answer(patterns[i], names) + "\n";
            ssize_t w = write(fd[1], a.data(), a.size());
            _exit(w == (ssize_t)a.size() ? 0 : 3);
        }
        close(fd[1]);
        std::string out;
        char buf[4096];
        ssize_t r;
        while ((r = read(fd[0], buf, sizeof buf)) > 0) out.append(buf, (size_t)r);
        close(fd[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            std::printf("%zu %s", i, out.c_str());
        else
            std::printf("%zu hang\n", i);
    }
    return 0;
}
