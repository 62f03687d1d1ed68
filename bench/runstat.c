/*
 * runstat.c - runs a command and prints its wall time and peak resident
 * memory (wait4's ru_maxrss), for the benchmark scripts: Debian's `time`
 * package is not on every machine.
 *
 * usage: ggufmap-runstat CMD [ARGS...]    (CMD's stdout goes to /dev/null)
 * prints: wall_s=S maxrss_kib=K status=N user_s=U sys_s=Y
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ggufmap-runstat CMD [ARGS...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, STDOUT_FILENO);
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("wall_s=%.6f maxrss_kib=%ld status=%d user_s=%.6f sys_s=%.6f\n", wall, ru.ru_maxrss,
           WIFEXITED(status) ? WEXITSTATUS(status) : 128, (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
    return 0;
}
