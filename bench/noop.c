/*
 * noop.c - the floor of bench/startup.sh: a program that prints a version
 * line and exits, loading no network library.  Built twice: with libc
 * alone (ggufmap-bench-noop), and linked with libcrypto as ggufmap is
 * (ggufmap-bench-noop-crypto, which calls it once so that the linker keeps
 * it), so that the bench shows what is ggufmap's own start-up and what is
 * the dynamic loader's.
 */
#include <stdio.h>
#ifdef NOOP_CRYPTO
#include <openssl/crypto.h>
#endif

int main(void) {
#ifdef NOOP_CRYPTO
    printf("noop (libcrypto %lx)\n", (unsigned long)OpenSSL_version_num());
#else
    printf("noop\n");
#endif
    return 0;
}
