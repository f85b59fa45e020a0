/*
 * Growing an array: the one helper every decoder and report uses.
 */
#ifndef PYD_GROW_H
#define PYD_GROW_H

#include <stdbool.h>
#include <stdlib.h>

/* Room for need elements of elem bytes in *v, whose capacity is *cap
 * (doubled, from 64); false if out of memory, with *v left as it was. */
static inline bool pyd_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*v, ncap * elem);
	if (!p)
		return false;
	*v = p;
	*cap = ncap;
	return true;
}

#endif
