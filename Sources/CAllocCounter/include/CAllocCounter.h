#ifndef CALLOCCOUNTER_H
#define CALLOCCOUNTER_H
#include <stdint.h>
/// Number of malloc/calloc/realloc/posix_memalign/aligned_alloc calls made by this
/// process since start. Counting is done by interposing the allocator in the
/// executable that links this target (benchmarks only).
uint64_t alloc_counter_total(void);
#endif
