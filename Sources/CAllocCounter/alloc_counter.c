// Heap-allocation counter for the benchmark harness.
// Defines the allocator entry points in the executable, so they take precedence
// over glibc's, count the call, and forward to glibc's __libc_* implementations.
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include "CAllocCounter.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic uint64_t counter;

uint64_t alloc_counter_total(void) { return counter; }

void *malloc(size_t n) { counter++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { counter++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { counter++; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { counter++; return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { counter++; return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    counter++;
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
