## The loop marker of the float32 kernels: POND_ROLLED before a loop keeps it rolled (one copy of its body: the
## code stays small in flash). GCC >= 8 and clang read "#pragma GCC unroll 1"; any other compiler gets nothing.
/* POND_ROLLED: keep the loop after it rolled (code size); a hint, without effect on any value computed. */
#ifndef POND_ROLLED
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#define POND_ROLLED _Pragma("GCC unroll 1")
#else
#define POND_ROLLED
#endif
#endif
