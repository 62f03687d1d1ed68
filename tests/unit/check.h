/*
 * check.h - the unit tests' harness: CHECK records a failure and goes on;
 * check_summary() prints "N passed, M failed" and gives the exit status.
 */
#ifndef GGUFMAP_TESTS_CHECK_H
#define GGUFMAP_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            check_passed++;                                                          \
        } else {                                                                     \
            check_failed++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        if (cond) {                                                              \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed == 0 && check_passed > 0 ? 0 : 1;
}

#endif
