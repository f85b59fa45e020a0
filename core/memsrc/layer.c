/*
 * Memory source layers (layer.h): the passing on.
 */
#include "layer.h"

static const struct pyd_memsrc *below(void *ctx)
{
	return ((const struct pyd_layer *)ctx)->inner;
}

static enum pyd_err l_mappings(void *ctx, const struct pyd_mapping **maps,
			       size_t *n)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->mappings(in->ctx, maps, n);
}

static enum pyd_err l_threads(void *ctx, const struct pyd_os_thread **t,
			      size_t *n)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->threads(in->ctx, t, n);
}

static enum pyd_err l_symbol(void *ctx, const char *name, uint64_t *addr)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->symbol(in->ctx, name, addr);
}

static int l_open_file(void *ctx, const struct pyd_mapping *m, char *used,
		       size_t usedsz)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->open_file(in->ctx, m, used, usedsz);
}

static enum pyd_err l_thread_run(void *ctx, int64_t tid,
				 enum pyd_thread_run *run)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->thread_run(in->ctx, tid, run);
}

static enum pyd_err l_regs(void *ctx, int64_t tid, uint64_t *regs)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->regs(in->ctx, tid, regs);
}

static enum pyd_err l_futex_wait(void *ctx, int64_t tid, uint64_t *addr)
{
	const struct pyd_memsrc *in = below(ctx);
	return in->futex_wait(in->ctx, tid, addr);
}

void pyd_layer_init(struct pyd_layer *l, const struct pyd_memsrc *inner,
		    pyd_read_fn *read, pyd_readv_fn *readv)
{
	l->inner = inner;
	l->src = (struct pyd_memsrc){
	    .ctx = l,
	    .read = read,
	    .readv = readv,
	    .mappings = inner->mappings ? l_mappings : NULL,
	    .threads = inner->threads ? l_threads : NULL,
	    .symbol = inner->symbol ? l_symbol : NULL,
	    .open_file = inner->open_file ? l_open_file : NULL,
	    .thread_run = inner->thread_run ? l_thread_run : NULL,
	    .regs = inner->regs ? l_regs : NULL,
	    .futex_wait = inner->futex_wait ? l_futex_wait : NULL,
	    .arch = inner->arch,
	};
}
