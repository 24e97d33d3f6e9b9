## Reset of an arena whose every byte starts at 0, as a loop of byte stores (no memset call; a character type
## may read and write any object's bytes). The pragma keeps the loop rolled (one copy: small code).
{ /* every state buffer (and the scratch arena) to 0 */
    unsigned char *const bytes = (unsigned char *)a;
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#pragma GCC unroll 1
#endif
    for (size_t i = 0; i < sizeof *a; ++i) bytes[i] = 0;
}
