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
//   i hang           the search did not finish: more than PROBE_STEPS steps
//                    on one name (libstdc++, built with -DPROBE_COUNT_STEPS),
//                    else no answer within PROBE_SECONDS (or the process
//                    died: libstdc++ backtracks without limit and recurses)
//   i timeout        (counting build only) no answer within PROBE_SECONDS
//                    although no name took PROBE_STEPS steps: a test
//                    failure, never a verdict
// Each pattern runs in a child process with a time limit of its own.
//
// Steps, not seconds (libstdc++).  Whether a search "does not finish" must
// not depend on how fast or how loaded the machine is: `.*.*.*.*.*x` on a
// 63-byte name takes libstdc++ 3.8e8 steps, 1.5 s on an idle machine and
// over 2 s on a busy one.  So the libstdc++ probe counts what our engine
// counts (src/regex_libstdcxx.c): calls of the DFS executor's _M_dfs, one
// per state visited.  It is built with -finstrument-functions, which makes
// every function compiled here (std::regex's templates included, inlined
// or not) call __cyg_profile_func_enter first; the hook knows _M_dfs by its
// symbol (dladdr, the probe is linked with -rdynamic) and ends the child
// with HANG_STATUS once one regex_search has made more than PROBE_STEPS
// calls: the same budget, in the same unit, as ours.
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
#ifdef PROBE_COUNT_STEPS
#include <cstdint>
#include <dlfcn.h>
#endif

#include "corpus_text.h"

enum { HANG_STATUS = 4 }; // the child's exit status when the step budget ran out

#ifdef PROBE_COUNT_STEPS
// ---- counting _M_dfs calls (see the top of the file) ----
#define PROBE_HOOK __attribute__((no_instrument_function))
extern "C" {
void __cyg_profile_func_enter(void *fn, void *site) PROBE_HOOK;
void __cyg_profile_func_exit(void *fn, void *site) PROBE_HOOK;
}
static uint64_t steps, max_steps = UINT64_MAX; // per regex_search
static void *seen_fn[1u << 14];                // functions met so far (open addressing)
static bool seen_dfs[1u << 14];

// Whether fn is the DFS executor's _M_dfs: _Executor<..., true>::_M_dfs
// (the last template argument, __dfs_mode, mangles as Lb1E).
static bool PROBE_HOOK is_dfs(void *fn) {
    Dl_info info;
    return dladdr(fn, &info) && info.dli_sname && std::strstr(info.dli_sname, "Lb1EE6_M_dfsE");
}

void __cyg_profile_func_enter(void *fn, void *) {
    const size_t mask = (1u << 14) - 1;
    size_t h = ((uintptr_t)fn >> 4) & mask;
    while (seen_fn[h] && seen_fn[h] != fn) h = (h + 1) & mask;
    if (!seen_fn[h]) {
        seen_fn[h] = fn;
        seen_dfs[h] = is_dfs(fn);
    }
    if (seen_dfs[h] && ++steps > max_steps) _exit(HANG_STATUS);
}
void __cyg_profile_func_exit(void *, void *) {}
static void PROBE_HOOK new_search() { steps = 0; }
static bool counting() { return true; }
#else
static void new_search() {}
static bool counting() { return false; }
#endif

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
                new_search();
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
#ifdef PROBE_COUNT_STEPS
    if (getenv("PROBE_STEPS")) max_steps = std::strtoull(getenv("PROBE_STEPS"), nullptr, 10);
#endif
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
        else if (counting() && WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            std::printf("%zu timeout\n", i);
        else
            std::printf("%zu hang\n", i);
    }
    return 0;
}
