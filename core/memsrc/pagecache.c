/*
 * The page cache source (pagecache.h).  Direct-mapped by page number.  A
 * page that cannot be read whole (the end of a snapshot's range, a core
 * that left part of it out) is not cached: its bytes are read exactly
 * as asked, as without the cache.
 */
#include "pagecache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../arena.h"

/* A cache of more than a megabyte (a task graph's) asks for its bytes
 * past the first 256 KiB on huge pages: where a fault costs 10 us (a
 * VM's), the 2,400 pages a graph of 10,000 tasks keeps cost 25 ms in
 * faults, five huge pages under 1 ms.  A small graph stays in the first
 * 256 KiB, on small pages: a huge one costs as much as 20 of them. */
#define SMALL_BYTES ((size_t)256 << 10)

static size_t slot_of(const struct pyd_pagecache *c, uint64_t page)
{
	return (size_t)(page / PYD_PAGE) & (c->nslots - 1);
}

/* The bytes slot i keeps: the next page of data the first time. */
static uint8_t *bytes_of(struct pyd_pagecache *c, size_t i)
{
	if (!c->at[i])
		c->at[i] = (uint32_t)++c->used;
	return c->data[c->at[i] - 1];
}

/* Read the block of c->around pages holding page into their slots, in
 * one call; whether page itself was read. */
static bool read_block(struct pyd_pagecache *c, uint64_t page)
{
	struct pyd_iov v[PYD_PAGECACHE_MAX_AROUND];
	uint64_t first = page & ~((uint64_t)c->around * PYD_PAGE - 1);
	size_t n = 0, done = 0;
	if (c->around > PYD_PAGECACHE_MAX_AROUND)
		return false;
	for (uint64_t pg = first; pg < first + c->around * PYD_PAGE; pg += PYD_PAGE) {
		size_t i = slot_of(c, pg);
		if (c->pages[i] == pg + 1)
			continue;
		c->pages[i] = 0;
		v[n++] = (struct pyd_iov){pg, bytes_of(c, i), PYD_PAGE};
	}
	pyd_readv(c->layer.inner, v, n, &done);
	for (size_t k = 0; k < done; k++)
		c->pages[slot_of(c, v[k].addr)] = v[k].addr + 1;
	return c->pages[slot_of(c, page)] == page + 1;
}

static enum pyd_err cached_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyd_pagecache *c = ctx;
	uint8_t *out = buf;
	while (len) {
		uint64_t page = addr & ~(uint64_t)(PYD_PAGE - 1);
		size_t off = (size_t)(addr - page);
		size_t n = PYD_PAGE - off < len ? PYD_PAGE - off : len;
		size_t i = slot_of(c, page);
		if (c->pages[i] != page + 1 &&
		    (c->around < 2 || !read_block(c, page))) {
			c->pages[i] = 0;
			enum pyd_err err = pyd_read(c->layer.inner, page,
						    bytes_of(c, i), PYD_PAGE);
			if (err == PYD_E_EXITED)
				return err;
			if (err)
				return pyd_read(c->layer.inner, addr, out, len);
			c->pages[i] = page + 1;
		}
		memcpy(out, c->data[c->at[i] - 1] + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return PYD_OK;
}

/* Whether [addr, addr + len) lies in pages held, without reading. */
static bool held(const struct pyd_pagecache *c, uint64_t addr, size_t len)
{
	uint64_t page = addr & ~(uint64_t)(PYD_PAGE - 1);
	for (; page < addr + len; page += PYD_PAGE)
		if (c->pages[slot_of(c, page)] != page + 1)
			return false;
	return true;
}

/* Ranges the cache holds come from it; the rest are read as asked, all
 * in one read of the source beneath, not a page each: a batch of small
 * reads on scattered pages (the lengths of a dict's keys) is one call. */
static enum pyd_err cached_readv(void *ctx, const struct pyd_iov *v, size_t n,
				 size_t *done)
{
	struct pyd_pagecache *c = ctx;
	struct pyd_iov *direct = malloc(n * sizeof *direct);
	size_t *at = malloc(n * sizeof *at), nd = 0, dd = 0;
	enum pyd_err err = PYD_OK;
	if (!direct || !at) {
		free(direct);
		free(at);
		for (*done = 0; *done < n; ++*done)
			if ((err = cached_read(c, v[*done].addr, v[*done].buf,
					       v[*done].len)))
				break;
		return err == PYD_E_EXITED ? err : PYD_OK;
	}
	for (size_t i = 0; i < n; i++) {
		if (held(c, v[i].addr, v[i].len)) {
			cached_read(c, v[i].addr, v[i].buf, v[i].len);
			continue;
		}
		at[nd] = i;
		direct[nd++] = v[i];
	}
	if (nd)
		err = pyd_readv(c->layer.inner, direct, nd, &dd);
	*done = dd < nd ? at[dd] : n;
	free(direct);
	free(at);
	return err;
}

/* The data: past SMALL_BYTES on huge pages if it is over a megabyte;
 * else from malloc, as a mapping of its own costs two system calls. */
static bool alloc_data(struct pyd_pagecache *c)
{
	size_t len = c->nslots * PYD_PAGE;
	if (len <= ((size_t)1 << 20))
		return (c->data = malloc(len));
	return (c->data = pyd_huge_map(len, SMALL_BYTES, &c->map, &c->mapped));
}

bool pyd_pagecache_init(struct pyd_pagecache *c, const struct pyd_memsrc *inner,
			size_t nslots)
{
	pyd_layer_init(&c->layer, inner, cached_read, cached_readv);
	c->nslots = nslots;
	c->around = 1;
	c->used = 0;
	c->map = NULL;
	c->data = NULL;
	c->pages = calloc(nslots, sizeof *c->pages);
	c->at = calloc(nslots, sizeof *c->at);
	if (!c->pages || !c->at || !alloc_data(c)) {
		pyd_pagecache_free(c);
		c->layer.src = *inner;
		return false;
	}
	return true;
}

void pyd_pagecache_clear(struct pyd_pagecache *c)
{
	memset(c->pages, 0, c->nslots * sizeof *c->pages);
}

void pyd_pagecache_free(struct pyd_pagecache *c)
{
	free(c->pages);
	free(c->at);
	if (c->map)
		pyd_huge_unmap(c->map, c->mapped);
	else
		free(c->data);
	c->pages = NULL;
	c->at = NULL;
	c->map = NULL;
	c->data = NULL;
}
