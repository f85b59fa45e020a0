/*
 * The listed tasks (taskset.h): a set by id, the threads they run on,
 * and the awaited-by edges between them.
 */
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "taskset.h"

enum pyd_err tasks_rd(struct tctx *c, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return PYD_E_READ;
	return pyd_read(c->s->src, addr, buf, len);
}

/* ---- the set of listed tasks ----------------------------------------- */

static size_t hslot(const struct tctx *c, uint64_t id)
{
	size_t mask = c->hcap - 1;
	size_t i = (size_t)((id >> 3) * 0x9E3779B97F4A7C15ULL) & mask;
	while (c->hkeys[i] && c->hkeys[i] != id)
		i = (i + 1) & mask;
	return i;
}

/* Index of the task with this id, or -1. */
long tasks_find_task(const struct tctx *c, uint64_t id)
{
	if (!c->hcap || !id)
		return -1;
	size_t i = hslot(c, id);
	return c->hkeys[i] ? (long)c->hvals[i] : -1;
}

static bool hgrow(struct tctx *c)
{
	size_t cap = c->hcap ? c->hcap * 2 : 1024;
	uint64_t *keys = calloc(cap, sizeof *keys);
	uint32_t *vals = calloc(cap, sizeof *vals);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return false;
	}
	uint64_t *ok = c->hkeys;
	uint32_t *ov = c->hvals;
	size_t ocap = c->hcap;
	c->hkeys = keys;
	c->hvals = vals;
	c->hcap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (ok[i]) {
			size_t j = hslot(c, ok[i]);
			c->hkeys[j] = ok[i];
			c->hvals[j] = ov[i];
		}
	free(ok);
	free(ov);
	return true;
}

struct raw_task *tasks_add(struct tctx *c, uint64_t id, enum pyd_err *err)
{
	*err = PYD_OK;
	if (tasks_find_task(c, id) >= 0) {
		*err = PYD_E_TORN;
		return NULL;
	}
	if (c->nraw >= PYD_MAX_TASKS) {
		c->capped = true; /* list no more */
		return NULL;
	}
	if (!pyd_grow((void **)&c->raw, &c->rawcap, c->nraw + 1,
		      sizeof *c->raw) ||
	    ((c->nraw + 1) * 2 > c->hcap && !hgrow(c))) {
		*err = PYD_E_NOMEM;
		return NULL;
	}
	size_t slot = hslot(c, id);
	c->hkeys[slot] = id;
	c->hvals[slot] = (uint32_t)c->nraw;
	struct raw_task *r = &c->raw[c->nraw++];
	*r = (struct raw_task){.id = id, .state = -1, .thread = -1,
			       .lister = (uint8_t)c->lister};
	return r;
}

long tasks_thread_by_pthread(const struct tctx *c, uint64_t pth)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].pthread == pth)
			return (long)i;
	return -1;
}

enum pyd_err tasks_edge(struct tctx *c, size_t i, size_t waiter)
{
	for (size_t k = 0; k < c->nab[i]; k++)
		if (c->ab[i][k] == waiter)
			return PYD_OK;
	if (!pyd_grow_one((void **)&c->ab[i], c->nab[i], sizeof *c->ab[i]))
		return PYD_E_NOMEM;
	c->ab[i][c->nab[i]++] = (uint32_t)waiter;
	return PYD_OK;
}

enum pyd_task_state tasks_task_state(int32_t st)
{
	switch (st) {
	case FUT_PENDING:
		return PYD_TASK_PENDING;
	case FUT_CANCELLED:
		return PYD_TASK_CANCELLED;
	case FUT_FINISHED:
		return PYD_TASK_DONE;
	}
	return PYD_TASK_UNKNOWN;
}
