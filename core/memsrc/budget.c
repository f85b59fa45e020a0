/*
 * A memory source on a budget (budget.h).
 */
#include "budget.h"

/* Take n reads of len bytes from the budget; false (and spent) if that
 * is more than is left. */
static bool take(struct pyd_budget *b, uint64_t n, uint64_t len)
{
	if (n > b->reads || len > b->bytes) {
		b->spent = true;
		return false;
	}
	b->reads -= n;
	b->bytes -= len;
	return true;
}

static enum pyd_err b_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyd_budget *b = ctx;
	if (!take(b, 1, len))
		return PYD_E_READ;
	return pyd_read(b->inner, addr, buf, len);
}

static enum pyd_err b_readv(void *ctx, const struct pyd_iov *v, size_t n,
			    size_t *done)
{
	struct pyd_budget *b = ctx;
	uint64_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += v[i].len;
	if (!take(b, n, len)) {
		*done = 0;
		return PYD_OK;
	}
	return pyd_readv(b->inner, v, n, done);
}

static enum pyd_err b_mappings(void *ctx, const struct pyd_mapping **maps,
			       size_t *n)
{
	const struct pyd_memsrc *in = ((struct pyd_budget *)ctx)->inner;
	return in->mappings(in->ctx, maps, n);
}

static enum pyd_err b_threads(void *ctx, const struct pyd_os_thread **t,
			      size_t *n)
{
	const struct pyd_memsrc *in = ((struct pyd_budget *)ctx)->inner;
	return in->threads(in->ctx, t, n);
}

static enum pyd_err b_symbol(void *ctx, const char *name, uint64_t *addr)
{
	const struct pyd_memsrc *in = ((struct pyd_budget *)ctx)->inner;
	return in->symbol(in->ctx, name, addr);
}

static int b_open_file(void *ctx, const struct pyd_mapping *m, char *used,
		       size_t usedsz)
{
	const struct pyd_memsrc *in = ((struct pyd_budget *)ctx)->inner;
	return in->open_file(in->ctx, m, used, usedsz);
}

static enum pyd_err b_thread_run(void *ctx, int64_t tid,
				 enum pyd_thread_run *run)
{
	const struct pyd_memsrc *in = ((struct pyd_budget *)ctx)->inner;
	return in->thread_run(in->ctx, tid, run);
}

static enum pyd_err b_regs(void *ctx, int64_t tid, uint64_t *regs)
{
	const struct pyd_memsrc *in = ((struct pyd_budget *)ctx)->inner;
	return in->regs(in->ctx, tid, regs);
}

void pyd_budget_init(struct pyd_budget *b, const struct pyd_memsrc *inner,
		     uint64_t max_reads, uint64_t max_bytes)
{
	*b = (struct pyd_budget){
	    .src = {.ctx = b,
		    .read = b_read,
		    .readv = b_readv,
		    .mappings = inner->mappings ? b_mappings : NULL,
		    .threads = inner->threads ? b_threads : NULL,
		    .symbol = inner->symbol ? b_symbol : NULL,
		    .open_file = inner->open_file ? b_open_file : NULL,
		    .thread_run = inner->thread_run ? b_thread_run : NULL,
		    .regs = inner->regs ? b_regs : NULL},
	    .inner = inner,
	    .max_reads = max_reads,
	    .max_bytes = max_bytes};
	pyd_budget_refill(b);
}

void pyd_budget_refill(struct pyd_budget *b)
{
	b->reads = b->max_reads;
	b->bytes = b->max_bytes;
	b->spent = false;
}
