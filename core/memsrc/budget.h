/*
 * A memory source on a budget: it passes reads on to another source and
 * counts them, and once the reads or the bytes it was given are spent it
 * refuses the rest (PYD_E_READ) and says so.  Target memory may be
 * corrupt or hostile: lists that look endless, pointers that lead back
 * into themselves at every step.  A budget bounds what any such input
 * costs, whatever path through the decoders it takes.
 */
#ifndef PYD_MEMSRC_BUDGET_H
#define PYD_MEMSRC_BUDGET_H

#include "layer.h"

struct pyd_budget {
	struct pyd_layer layer; /* read through layer.src */
	uint64_t reads, bytes; /* left */
	uint64_t max_reads, max_bytes;
	bool spent; /* a read was refused */
};

/* Reads of inner through b->src, at most max_reads of them (a batched
 * read counts each range) and max_bytes in all.  Everything else inner
 * answers is passed on as it is. */
void pyd_budget_init(struct pyd_budget *b, const struct pyd_memsrc *inner,
		     uint64_t max_reads, uint64_t max_bytes);
/* The whole budget again (a sampler's next round). */
void pyd_budget_refill(struct pyd_budget *b);

#endif
