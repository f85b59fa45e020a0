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
	return pyd_read(b->layer.inner, addr, buf, len);
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
	return pyd_readv(b->layer.inner, v, n, done);
}

void pyd_budget_init(struct pyd_budget *b, const struct pyd_memsrc *inner,
		     uint64_t max_reads, uint64_t max_bytes)
{
	*b = (struct pyd_budget){.max_reads = max_reads, .max_bytes = max_bytes};
	pyd_layer_init(&b->layer, inner, b_read, b_readv);
	pyd_budget_refill(b);
}

void pyd_budget_refill(struct pyd_budget *b)
{
	b->reads = b->max_reads;
	b->bytes = b->max_bytes;
	b->spent = false;
}
