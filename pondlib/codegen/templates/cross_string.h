## The minimal <string.h> of a freestanding cross build: the two functions generated C calls.
/* Minimal <string.h> for the freestanding build of pondlib.codegen.cross. */
#ifndef POND_CROSS_STRING_H
#define POND_CROSS_STRING_H
#include <stddef.h>
void *memset(void *d, int c, size_t n);
void *memcpy(void *restrict d, const void *restrict s, size_t n);
#endif
