/*
 * load.c - placeholder; the load module is being written.
 */
#include "internal.h"
