/*
 * The prefetching source (prefetch.h).
 */
#include "prefetch.h"

#include <stdlib.h>

#include "../grow.h"

/* Ranges this close are one run: the bytes between lie in the pages the
 * two reads touched (a gap is under a page), so reading them cannot fail
 * where the reads did not, and one range costs the kernel less than two. */
#define PREFETCH_GAP 256u
/* A bound on the runs and bytes of one batch: the source splits the runs
 * into process_vm_readv calls of UIO_MAXIOV (1,024) each, so a thousand
 * greenlets, each with its frames in a data-stack chunk of its own, cost
 * a few calls, not thousands of reads. */
#define PREFETCH_MAX_RUNS 16384u
#define PREFETCH_MAX_BYTES (16u << 20)
/* Bytes of earlier batches' buffers a read-ahead holds at most. */
#define PREFETCH_MAX_HELD PREFETCH_MAX_BYTES
/* Reads a pass remembers for the next, and the largest one worth it. */
#define PREFETCH_MAX_MISSES 65536u
#define PREFETCH_MAX_READ (256u << 10)
/* Pages whose runs are found without a search: direct-mapped, each
 * slot set by the search of its page's first read in a batch.  A read
 * that misses the last run searches them (some 75 instructions over a
 * thousand runs): a 100-thread dump's reads hop between thread states,
 * frames, code and names 9,400 times, each on a page read before.  16
 * KiB, touched only where used: a slot table of every page of a batch
 * (64 KiB, zeroed) cost 16 page faults, more than the searches it saved
 * a dump. */
#define PREFETCH_SLOTS 1024u /* a power of 2 */

/* Whether [addr, addr + len) lies inside run r (overflow-safe), read or
 * not. */
static bool holds(const struct pyd_prefetch_run *r, uint64_t addr, size_t len)
{
	return addr >= r->addr && addr - r->addr <= r->len &&
	       len <= r->len - (addr - r->addr);
}

/* The first run that ends past page pg's start: runs are sorted and
 * disjoint, so their ends are sorted too. */
static size_t first_run(const struct pyd_prefetch *p, uint64_t pg)
{
	size_t lo = 0, hi = p->nruns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->runs[mid].addr + p->runs[mid].len <= pg << 12)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The run holding [addr, addr + len), or NULL: the runs from the page's
 * first on, while they start at or before addr.  The page's slot keeps
 * where they start for the next read in it (no slots if out of memory:
 * each read searches). */
static struct pyd_prefetch_run *search(struct pyd_prefetch *p, uint64_t addr,
				       size_t len)
{
	uint64_t pg = addr >> 12;
	if (!p->nruns)
		return NULL;
	if (!p->slots)
		p->slots = calloc(PREFETCH_SLOTS, sizeof *p->slots);
	struct pyd_prefetch_slot *sl =
	    p->slots ? &p->slots[pg & (PREFETCH_SLOTS - 1)] : NULL;
	size_t i;
	if (sl && sl->gen == p->gen && sl->page == pg + 1) {
		i = sl->run;
	} else {
		i = first_run(p, pg);
		if (sl)
			*sl = (struct pyd_prefetch_slot){pg + 1, (uint32_t)i,
							 p->gen};
	}
	for (; i < p->nruns && p->runs[i].addr <= addr; i++)
		if (holds(&p->runs[i], addr, len))
			return &p->runs[i];
	return NULL;
}

static struct pyd_prefetch_run *find(struct pyd_prefetch *p, uint64_t addr,
				     size_t len)
{
	/* A walk reads its nodes one after another in one run. */
	if (p->last < p->nruns && holds(&p->runs[p->last], addr, len))
		return &p->runs[p->last];
	struct pyd_prefetch_run *r = search(p, addr, len);
	if (r)
		p->last = (size_t)(r - p->runs);
	return r;
}

/* Whether this pass wanted [addr, addr + len) already; if not, it is
 * noted as wanted. */
static bool wanted(struct pyd_prefetch *p, uint64_t addr, size_t len)
{
	size_t n = sizeof p->wanted / sizeof *p->wanted;
	struct pyd_prefetch_wanted *w =
	    &p->wanted[(size_t)((addr * 0x9E3779B97F4A7C15ULL) >> 32) & (n - 1)];
	if (w->pass == p->pass && w->addr == addr && w->len == len)
		return true;
	*w = (struct pyd_prefetch_wanted){addr, len, p->pass};
	return false;
}

void pyd_prefetch_want(struct pyd_prefetch *p, uint64_t addr, size_t len)
{
	if (!len || len > PREFETCH_MAX_READ || addr + len < addr ||
	    wanted(p, addr, len) ||
	    p->nmissed >= PREFETCH_MAX_MISSES ||
	    !pyd_grow((void **)&p->missed, &p->missed_cap, p->nmissed + 1,
		      sizeof *p->missed))
		return;
	p->missed[p->nmissed++] = (struct pyd_prefetch_range){addr, len, 0};
}

void pyd_prefetch_missed(struct pyd_prefetch *p, uint64_t addr, size_t len)
{
	p->nfailed++;
	pyd_prefetch_want(p, addr, len);
}

/* A read the batch misses joins the next, where it could be read: one
 * that fails would cost every pass a call of its own.  A dry run wants
 * what the batch could not read only once. */
static enum pyd_err pf_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyd_prefetch *p = ctx;
	if (!len)
		return PYD_OK;
	struct pyd_prefetch_run *r = find(p, addr, len);
	if (r && r->ok) {
		memcpy(buf, r->data + (addr - r->addr), len);
		r->used = true;
		return PYD_OK;
	}
	if (p->dry) {
		if (!r)
			pyd_prefetch_missed(p, addr, len);
		return PYD_E_READ;
	}
	enum pyd_err err = pyd_read(p->layer.inner, addr, buf, len);
	if (!err)
		pyd_prefetch_want(p, addr, len);
	return err;
}

/* Range by range, as pyd_readv's loop, except that a dry run goes on
 * past a miss: it wants every range missed, not the first only (a
 * batch of keys compared at once would learn one key a pass). */
static enum pyd_err pf_readv(void *ctx, const struct pyd_iov *v, size_t n,
			     size_t *done)
{
	struct pyd_prefetch *p = ctx;
	*done = n;
	for (size_t i = 0; i < n; i++) {
		enum pyd_err err = pf_read(p, v[i].addr, v[i].buf, v[i].len);
		if (err && *done > i)
			*done = i;
		if (err == PYD_E_EXITED)
			return err;
		if (err && !p->dry)
			break;
	}
	return PYD_OK;
}

void pyd_prefetch_init(struct pyd_prefetch *p, const struct pyd_memsrc *inner)
{
	*p = (struct pyd_prefetch){.pass = 1};
	pyd_layer_init(&p->layer, inner, pf_read, pf_readv);
}

static int by_addr(const void *a, const void *b)
{
	const struct pyd_prefetch_range *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The ranges of the next batch, sorted: runs the last pass used (sorted
 * already) merged with the reads it missed, sorted first.  Their number,
 * or 0 if out of memory. */
static size_t gather(struct pyd_prefetch *p)
{
	size_t n = 0, r = 0, m = 0;
	if (!pyd_grow((void **)&p->next, &p->next_cap, p->nruns + p->nmissed,
		      sizeof *p->next))
		return 0;
	if (p->nmissed > 1) /* qsort's array may not be NULL, even when empty */
		qsort(p->missed, p->nmissed, sizeof *p->missed, by_addr);
	while (r < p->nruns || m < p->nmissed) {
		if (r < p->nruns && !(p->runs[r].used || (p->keep && p->runs[r].ok))) {
			r++;
		} else if (r < p->nruns &&
			   (m == p->nmissed || p->runs[r].addr <= p->missed[m].addr)) {
			const struct pyd_prefetch_run *k = &p->runs[r++];
			p->next[n++] = (struct pyd_prefetch_range){
			    k->addr, k->len, p->keep && k->ok ? k->data : NULL};
		} else {
			p->next[n++] = p->missed[m++];
		}
	}
	return n;
}

/* Merge the sorted ranges into runs, within the bounds of one batch. */
static void merge(struct pyd_prefetch *p, size_t n)
{
	size_t bytes = 0;
	p->nruns = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pyd_prefetch_range *g = &p->next[i];
		struct pyd_prefetch_run *r =
		    p->nruns ? &p->runs[p->nruns - 1] : NULL;
		uint64_t end = g->addr + g->len;
		if (r && g->addr - r->addr <= r->len + PREFETCH_GAP) {
			size_t grown = end > r->addr + r->len
			                   ? (size_t)(end - r->addr) - r->len
			                   : 0;
			if (bytes + grown > PREFETCH_MAX_BYTES)
				break;
			/* A kept run grown or joined is read again whole. */
			if (grown || g->kept)
				r->kept = NULL;
			r->len += grown;
			bytes += grown;
			continue;
		}
		if (p->nruns == PREFETCH_MAX_RUNS ||
		    bytes + g->len > PREFETCH_MAX_BYTES)
			break;
		p->runs[p->nruns++] = (struct pyd_prefetch_run){
		    .addr = g->addr, .len = g->len, .kept = g->kept};
		bytes += g->len;
	}
}

/* Where a batch's bytes to read go: a read-ahead's (keep) into its
 * arena, which kept runs point into while later batches run; a sampler's
 * rounds into buf, reused round after round.  NULL if out of memory. */
static uint8_t *batch_room(struct pyd_prefetch *p, size_t bytes)
{
	if (!bytes)
		bytes = 1;
	if (p->keep) {
		p->held_bytes += bytes;
		return pyd_arena_alloc(&p->held, bytes);
	}
	return pyd_grow((void **)&p->buf, &p->buf_cap, bytes, 1) ? p->buf
								  : NULL;
}

/* Room for the bytes of a batch's runs to read, and each run's data set:
 * a kept run's stays where an earlier batch read it.  Once earlier
 * batches hold more than PREFETCH_MAX_HELD, the kept runs are read again
 * instead and the arena freed (a read-ahead holds about two batches at
 * most): nothing else points into it, as a read copies.  false if out of
 * memory. */
static bool place(struct pyd_prefetch *p)
{
	size_t bytes = 0, all = 0;
	for (size_t i = 0; i < p->nruns; i++) {
		all += p->runs[i].len;
		if (!p->runs[i].kept)
			bytes += p->runs[i].len;
	}
	if (p->keep && p->held_bytes > PREFETCH_MAX_HELD) {
		for (size_t i = 0; i < p->nruns; i++)
			p->runs[i].kept = NULL;
		bytes = all;
		pyd_arena_free(&p->held);
		p->held_bytes = 0;
	}
	uint8_t *to = batch_room(p, bytes);
	if (!to)
		return false;
	bytes = 0;
	for (size_t i = 0; i < p->nruns; i++) {
		struct pyd_prefetch_run *r = &p->runs[i];
		r->ok = r->kept != NULL;
		r->data = r->kept ? r->kept : to + bytes;
		if (!r->kept)
			bytes += r->len;
	}
	return true;
}

/* Read every run not kept into the batch's room, in one batch where all
 * can be read; a run that fails is left out (not ok) and the batch goes
 * on after it. */
static enum pyd_err fill(struct pyd_prefetch *p)
{
	size_t n = 0;
	if (!place(p) ||
	    !pyd_grow((void **)&p->iov, &p->iov_cap, p->nruns + 1,
		      sizeof *p->iov) ||
	    !pyd_grow((void **)&p->iov_run, &p->iov_run_cap, p->nruns + 1,
		      sizeof *p->iov_run)) {
		p->nruns = 0;
		return PYD_OK;
	}
	for (size_t i = 0; i < p->nruns; i++) {
		if (p->runs[i].kept)
			continue;
		p->iov_run[n] = (uint32_t)i;
		p->iov[n++] = (struct pyd_iov){p->runs[i].addr,
					       (void *)p->runs[i].data,
					       p->runs[i].len};
	}
	for (size_t i = 0; i < n;) {
		size_t done = 0;
		enum pyd_err err = pyd_readv(p->layer.inner, &p->iov[i], n - i, &done);
		if (err == PYD_E_EXITED) {
			p->nruns = 0;
			return err;
		}
		for (size_t k = i; k < i + done; k++)
			p->runs[p->iov_run[k]].ok = true;
		i += done;
		if (i < n)
			p->runs[p->iov_run[i++]].ok = false;
	}
	return PYD_OK;
}

enum pyd_err pyd_prefetch_pass(struct pyd_prefetch *p)
{
	size_t n = gather(p);
	p->nmissed = 0;
	p->pass++;
	if (!pyd_grow((void **)&p->runs, &p->runs_cap, PREFETCH_MAX_RUNS,
		      sizeof *p->runs)) {
		p->nruns = 0;
		return PYD_OK;
	}
	merge(p, n);
	/* A new batch: every slot is of an earlier one.  The table is
	 * cleared only when the generation wraps. */
	if (++p->gen == 0) {
		if (p->slots)
			memset(p->slots, 0, PREFETCH_SLOTS * sizeof *p->slots);
		p->gen = 1;
	}
	return fill(p);
}

void pyd_prefetch_free(struct pyd_prefetch *p)
{
	free(p->runs);
	free(p->buf);
	pyd_arena_free(&p->held);
	free(p->missed);
	free(p->next);
	free(p->iov);
	free(p->iov_run);
	free(p->slots);
	*p = (struct pyd_prefetch){0};
}
