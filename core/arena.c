/*
 * The arena and huge mappings (arena.h).  An arena's first 256 KiB come
 * in chunks of 64 KiB from malloc (a small graph's, reused from the heap
 * round after round by the sampler); past them each chunk is as large as
 * all before it, at least a huge page, mapped on huge pages.
 */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SMALL_CHUNK ((size_t)64 << 10)
#define SMALL_TOTAL ((size_t)256 << 10)

void *pyd_huge_map(size_t len, size_t small, void **map, size_t *mapped)
{
	*mapped = len + PYD_HUGE_PAGE;
	*map = mmap(NULL, *mapped, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*map == MAP_FAILED) {
		*map = NULL;
		return NULL;
	}
	uintptr_t from = ((uintptr_t)*map + small + PYD_HUGE_PAGE - 1) &
			 ~(uintptr_t)(PYD_HUGE_PAGE - 1);
	uintptr_t base = from - small;
#ifdef MADV_HUGEPAGE
	if (len > small)
		madvise((void *)from, base + len - from, MADV_HUGEPAGE);
#endif
	return (void *)base;
}

void pyd_huge_unmap(void *map, size_t mapped)
{
	if (map)
		munmap(map, mapped);
}

struct pyd_arena_chunk {
	struct pyd_arena_chunk *next;
	void *map; /* a huge chunk's mapping; NULL: malloc'd */
	size_t mapped, used, cap;
	_Alignas(16) unsigned char bytes[];
};

static struct pyd_arena_chunk *new_chunk(struct pyd_arena *a, size_t n)
{
	struct pyd_arena_chunk *k;
	size_t head = offsetof(struct pyd_arena_chunk, bytes);
	if (a->total < SMALL_TOTAL && n + head <= SMALL_CHUNK) {
		if (!(k = malloc(SMALL_CHUNK)))
			return NULL;
		k->map = NULL;
		k->cap = SMALL_CHUNK - head;
	} else {
		size_t len = a->total > n + head ? a->total : n + head;
		void *map;
		size_t mapped;
		len = (len + PYD_HUGE_PAGE - 1) & ~(PYD_HUGE_PAGE - 1);
		if (!(k = pyd_huge_map(len, 0, &map, &mapped)))
			return NULL;
		k->map = map;
		k->mapped = mapped;
		k->cap = len - head;
	}
	k->used = 0;
	k->next = a->head;
	a->head = k;
	a->total += k->cap + head;
	return k;
}

void *pyd_arena_alloc(struct pyd_arena *a, size_t n)
{
	struct pyd_arena_chunk *k = a->head;
	n = (n + 7) & ~(size_t)7;
	if ((!k || k->cap - k->used < n) && !(k = new_chunk(a, n)))
		return NULL;
	void *p = k->bytes + k->used;
	k->used += n;
	return p;
}

void *pyd_arena_dup(struct pyd_arena *a, const void *p, size_t n)
{
	void *q = pyd_arena_alloc(a, n);
	if (q && n)
		memcpy(q, p, n);
	return q;
}

void pyd_arena_free(struct pyd_arena *a)
{
	while (a->head) {
		struct pyd_arena_chunk *k = a->head;
		a->head = k->next;
		if (k->map)
			pyd_huge_unmap(k->map, k->mapped);
		else
			free(k);
	}
	a->total = 0;
}
