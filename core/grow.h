/*
 * Growing an array: the one helper every decoder and report uses.
 */
#ifndef PYD_GROW_H
#define PYD_GROW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Room for need elements of elem bytes in *v, whose capacity is *cap
 * (doubled, from first); false if out of memory, with *v and *cap left as
 * they were. */
static inline bool pyd_grow_from(void **v, size_t *cap, size_t need,
				 size_t elem, size_t first)
{
	if (need <= *cap)
		return true;
	size_t ncap = *cap ? *cap : first;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*v, ncap * elem);
	if (!p)
		return false;
	*v = p;
	*cap = ncap;
	return true;
}

/* The same from 64 elements. */
static inline bool pyd_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return pyd_grow_from(v, cap, need, elem, 64);
}

/* Swap two grown byte buffers and their capacities: a double buffer,
 * this pass's bytes beside the last pass's. */
static inline void pyd_grown_swap(uint8_t **a, size_t *acap, uint8_t **b,
				  size_t *bcap)
{
	uint8_t *p = *a;
	size_t cap = *acap;
	*a = *b;
	*acap = *bcap;
	*b = p;
	*bcap = cap;
}

/* Room for one more element in *v, which holds n, for an array that keeps
 * no capacity of its own and grows only through here: its capacity is
 * the power of two at or above n, so it is full when n is one (or 0). */
static inline bool pyd_grow_one(void **v, size_t n, size_t elem)
{
	size_t cap = n;
	return (n & (n - 1)) || pyd_grow_from(v, &cap, n + 1, elem, 1);
}

#endif
