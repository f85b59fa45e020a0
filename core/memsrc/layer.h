/*
 * A memory source laid over another one: the layer's own read (and
 * readv) see every read; everything else (mappings, threads, symbols,
 * files, registers) is passed to the source beneath as it is.  Budgets,
 * caches, counters and recorders are layers: put a struct pyd_layer first
 * in yours, so that your read's ctx is both the layer and your struct.
 */
#ifndef PYD_MEMSRC_LAYER_H
#define PYD_MEMSRC_LAYER_H

#include "memsrc.h"

struct pyd_layer {
	struct pyd_memsrc src; /* read through here */
	const struct pyd_memsrc *inner;
};

typedef enum pyd_err pyd_read_fn(void *ctx, uint64_t addr, void *buf,
				 size_t len);
typedef enum pyd_err pyd_readv_fn(void *ctx, const struct pyd_iov *v,
				  size_t n, size_t *done);

/* Lay l over inner with read and readv (NULL: pyd_readv's loop over
 * read).  What inner cannot answer, the layer cannot either. */
void pyd_layer_init(struct pyd_layer *l, const struct pyd_memsrc *inner,
		    pyd_read_fn *read, pyd_readv_fn *readv);

#endif
