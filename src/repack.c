/*
 * repack.c - placeholder; the repack module is being written.
 */
#include "internal.h"
