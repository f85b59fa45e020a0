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

static size_t hslot(const struct pyd_task_index *ix, uint64_t id)
{
	size_t mask = ix->cap - 1;
	size_t i = (size_t)((id >> 3) * 0x9E3779B97F4A7C15ULL) & mask;
	while (ix->keys[i] && ix->keys[i] != id)
		i = (i + 1) & mask;
	return i;
}

static long index_find(const struct pyd_task_index *ix, uint64_t id)
{
	if (!ix->cap || !id)
		return -1;
	size_t i = hslot(ix, id);
	return ix->keys[i] ? (long)ix->vals[i] : -1;
}

long tasks_find_task(const struct tctx *c, uint64_t id)
{
	return index_find(&c->ix, id);
}

long pyd_task_find(const struct pyd_task_graph *g, uint64_t id)
{
	if (g->index)
		return index_find(g->index, id);
	for (size_t i = 0; i < g->ntasks; i++)
		if (g->tasks[i].id == id)
			return (long)i;
	return -1;
}

static bool hgrow(struct pyd_task_index *ix)
{
	size_t cap = ix->cap ? ix->cap * 2 : 1024;
	struct pyd_task_index old = *ix;
	ix->keys = calloc(cap, sizeof *ix->keys);
	ix->vals = calloc(cap, sizeof *ix->vals);
	if (!ix->keys || !ix->vals) {
		free(ix->keys);
		free(ix->vals);
		*ix = old;
		return false;
	}
	ix->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i]) {
			size_t j = hslot(ix, old.keys[i]);
			ix->keys[j] = old.keys[i];
			ix->vals[j] = old.vals[i];
		}
	free(old.keys);
	free(old.vals);
	return true;
}

void tasks_index_free(struct pyd_task_index *ix)
{
	free(ix->keys);
	free(ix->vals);
	*ix = (struct pyd_task_index){0};
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
	    ((c->nraw + 1) * 2 > c->ix.cap && !hgrow(&c->ix))) {
		*err = PYD_E_NOMEM;
		return NULL;
	}
	size_t slot = hslot(&c->ix, id);
	c->ix.keys[slot] = id;
	c->ix.vals[slot] = (uint32_t)c->nraw;
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

struct task_fields tasks_builtin_fields(const struct py_layout *L)
{
	const struct py_objects *o = &L->objects;
	return (struct task_fields){
	    .size = o->task_size,
	    .name = o->task_name >= 0 ? o->task_name : -1,
	    .coro = o->task_coro,
	    .state = o->fut_state,
	    .waiter = o->task_fut_waiter >= 16 ? o->task_fut_waiter : -1,
	};
}

void tasks_fields(const struct tctx *c, const uint8_t *obj,
		  struct raw_task *r)
{
	const struct task_fields *f = &c->tf;
	r->type = pyd_u64_at(obj, (uint64_t)c->L->object.ob_type);
	r->name = f->name >= 0 ? pyd_u64_at(obj, (uint64_t)f->name) : 0;
	r->coro = pyd_u64_at(obj, (uint64_t)f->coro);
	if (f->waiter >= 0 && f->waiter + 8 <= f->size)
		r->waiter = pyd_u64_at(obj, (uint64_t)f->waiter);
	if (f->state >= 0)
		memcpy(&r->state, obj + f->state, sizeof r->state);
}

enum pyd_task_state tasks_state_now(struct tctx *c, const struct raw_task *r,
				    uint64_t *coro)
{
	uint8_t obj[MAX_TASK_SIZE];
	struct raw_task now = {.state = -1};
	if (c->tf.size <= 0 || c->tf.size > (int64_t)sizeof obj ||
	    tasks_rd(c, r->id, obj, (size_t)c->tf.size))
		return PYD_TASK_UNKNOWN;
	tasks_fields(c, obj, &now);
	*coro = now.coro;
	return now.state < 0 ? PYD_TASK_UNKNOWN : tasks_task_state(now.state);
}
