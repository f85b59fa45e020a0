/*
 * Memory for many small things freed together (a task graph's names,
 * frames and edges), and large mappings that may sit on huge pages.
 *
 * Why: where a page fault costs 10 us (a VM's), the 2.3 MB of frames a
 * graph of 10,000 tasks keeps, each task's in a block of its own, cost
 * 575 faults, 6 ms; bumped through an arena whose chunks past the first
 * 256 KiB are huge pages, two faults.  A small graph stays in the small
 * chunks.
 */
#ifndef PYD_ARENA_H
#define PYD_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#define PYD_HUGE_PAGE ((size_t)2 << 20)

/*
 * len bytes, mapped so that everything from small bytes in lies on huge
 * page boundaries and is asked for on huge pages (the first small bytes
 * stay on small pages: a huge page costs as much as 20 small ones, and
 * 2 MB of memory).  *map and *mapped are for pyd_huge_unmap.  NULL if out
 * of memory.
 */
void *pyd_huge_map(size_t len, size_t small, void **map, size_t *mapped);
void pyd_huge_unmap(void *map, size_t mapped);

struct pyd_arena_chunk;
struct pyd_arena {
	struct pyd_arena_chunk *head; /* the chunk bumped, newest first */
	size_t total;                 /* bytes of all chunks */
};

/* n bytes, 8-aligned, until pyd_arena_free; NULL if out of memory. */
void *pyd_arena_alloc(struct pyd_arena *a, size_t n);
/* A copy of n bytes of p in the arena. */
void *pyd_arena_dup(struct pyd_arena *a, const void *p, size_t n);
void pyd_arena_free(struct pyd_arena *a);

#endif
