/*
 * A memory source that keeps the pages it read: many small reads of
 * objects that sit close together (a frame's locals, their items) cost
 * one read per page.  Only for a pass that reads many scattered small
 * objects at one moment: what it serves may be older than the target's
 * memory by the length of the pass.
 */
#ifndef PYD_MEMSRC_PAGECACHE_H
#define PYD_MEMSRC_PAGECACHE_H

#include "layer.h"

#define PYD_PAGE 4096
#define PYD_PAGECACHE_MAX_AROUND 16

struct pyd_pagecache {
	struct pyd_layer layer; /* read through layer.src */
	/* Per slot, direct-mapped by page number: the address of the page
	 * held, +1 (0: empty), zeroed at the start; and where in data its
	 * bytes are.  A slot takes the next page of data the first time it
	 * is filled, so a pass that reads few pages touches few of ours,
	 * whatever their addresses. */
	uint64_t *pages;
	uint32_t *at;
	uint8_t (*data)[PYD_PAGE]; /* in map, never zeroed */
	void *map;     /* a huge mapping's; NULL: data is malloc'd */
	size_t mapped; /* bytes of map */
	size_t nslots;             /* a power of two */
	size_t used;               /* pages of data handed out */
	/* Pages a miss reads: the aligned block of them holding the page
	 * missed, in one call (1 unless set after init; a power of two, at
	 * most nslots and PYD_PAGECACHE_MAX_AROUND: past it a miss reads its
	 * page alone).  For a list whose nodes were allocated one after
	 * another, a thread state list's: a block holds the next dozen. */
	size_t around;
};

/* false if out of memory (then layer.src reads inner directly). */
bool pyd_pagecache_init(struct pyd_pagecache *c, const struct pyd_memsrc *inner,
			size_t nslots);
void pyd_pagecache_free(struct pyd_pagecache *c);
/* Forget every page held (a pass that must see the target anew), keeping
 * the memory. */
void pyd_pagecache_clear(struct pyd_pagecache *c);

#endif
