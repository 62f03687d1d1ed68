/*
 * hash.c - placeholder; the hash module is being written.
 */
#include "internal.h"
