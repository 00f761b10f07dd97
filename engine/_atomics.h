/* The few atomic operations the encoder's shared pre-token cache needs, with the orders it
 * needs them in: C11 <stdatomic.h> where the compiler has it (gcc, clang), MSVC's intrinsics
 * where it does not (its C compiler ships <stdatomic.h> only from Visual Studio 2022 17.5, and
 * then only behind /experimental:c11atomics). Both are lock-free: a load or a store is one
 * instruction, and so is an add or a compare-and-swap (a locked one). */
#ifndef ENGINE_ATOMICS_H
#define ENGINE_ATOMICS_H

#include <stddef.h>
#include <stdint.h>

#if defined(_MSC_VER) && !defined(__clang__)

#include <intrin.h>

/* MSVC's intrinsics take long (32 bits on Windows) and __int64; the values are cast. */
typedef volatile uint32_t atomic_u32;
typedef volatile size_t atomic_size;
_Static_assert(sizeof(long) == sizeof(uint32_t), "MSVC's long is 32 bits");

static inline uint32_t load_acquire_u32(const atomic_u32 *p) {
#if defined(_M_ARM64)
    return (uint32_t)__ldar32((unsigned __int32 volatile *)p);
#elif defined(_M_X64) || defined(_M_IX86)
    uint32_t v = *p;       /* x86 loads acquire; the barrier keeps the compiler from reordering */
    _ReadWriteBarrier();
    return v;
#else
#error "no acquire load for this processor"
#endif
}

/* A full barrier on MSVC: stronger than release on success and acquire on failure. */
static inline int cas_release_u32(atomic_u32 *p, uint32_t *expected, uint32_t desired) {
    uint32_t seen = (uint32_t)_InterlockedCompareExchange((volatile long *)p, (long)desired, (long)*expected);
    if (seen == *expected) return 1;
    *expected = seen;
    return 0;
}

static inline size_t load_relaxed_size(const atomic_size *p) {
    return *p; /* size_t is the machine word: a volatile load is whole */
}

static inline void store_relaxed_size(atomic_size *p, size_t v) {
    *p = v;
}

static inline size_t fetch_add_relaxed_size(atomic_size *p, size_t v) {
#ifdef _WIN64
    return (size_t)_InterlockedExchangeAdd64((volatile __int64 *)p, (__int64)v);
#else
    return (size_t)_InterlockedExchangeAdd((volatile long *)p, (long)v);
#endif
}

#else

#include <stdatomic.h>

#if ATOMIC_INT_LOCK_FREE != 2 || ATOMIC_POINTER_LOCK_FREE != 2
#error "the pre-token cache needs lock-free 32-bit and word-sized atomics"
#endif

typedef _Atomic uint32_t atomic_u32;
typedef _Atomic size_t atomic_size;

static inline uint32_t load_acquire_u32(const atomic_u32 *p) {
    return atomic_load_explicit(p, memory_order_acquire);
}

/* Release on success (the entry it publishes is written), acquire on failure (the caller
 * reads the entry another thread published). */
static inline int cas_release_u32(atomic_u32 *p, uint32_t *expected, uint32_t desired) {
    return atomic_compare_exchange_strong_explicit(p, expected, desired, memory_order_release, memory_order_acquire);
}

static inline size_t load_relaxed_size(const atomic_size *p) {
    return atomic_load_explicit(p, memory_order_relaxed);
}

static inline void store_relaxed_size(atomic_size *p, size_t v) {
    atomic_store_explicit(p, v, memory_order_relaxed);
}

static inline size_t fetch_add_relaxed_size(atomic_size *p, size_t v) {
    return atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}

#endif

/* Slots are zeroed by memset and calloc while no other thread uses them: an atomic slot must
 * be a plain 32-bit word, and a size_t counter a plain word. */
_Static_assert(sizeof(atomic_u32) == sizeof(uint32_t), "an atomic slot is 4 bytes");
_Static_assert(sizeof(size_t) == sizeof(void *), "size_t is the machine word");

#endif
