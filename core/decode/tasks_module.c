/*
 * Lister "tasks from the asyncio module's state": every task of 3.7 -
 * 3.13, and the pure-Python tasks 3.14+ keeps outside its native lists.
 *
 * Before 3.14 the tasks are in the asyncio.tasks module: `_all_tasks`
 * (3.7-3.11), or `_scheduled_tasks` and `_eager_tasks` (3.12, 3.13): a
 * WeakSet (its `data` attribute, a set of weakrefs to the tasks) or a set.
 * With the C accelerator they are the _asyncio module's objects.  The
 * running task of each loop is a value of `_current_tasks` (loop -> task).
 * A task's thread is the one whose thread_id its loop's `_thread_id`
 * holds (set while the loop runs; None for a loop no thread runs).
 *
 * Tasks are C Tasks (_asyncio.Task and subclasses): fut_state, task_name
 * (a str; 3.12+ an int N meaning "Task-N" until get_name()), task_coro,
 * task_fut_waiter (what the task's coroutine chain yielded: the future the
 * task waits on).  Who awaits whom comes from that waiter, as
 * tests/targets/asyncio_graph.py derives it: a Task is awaited directly;
 * a gather() future's `_children` (recursively); any other future F is
 * awaited through the tasks whose done-callbacks lead to F -- shield()'s
 * `_inner_done_callback` closure holds F, a TaskGroup's `_on_task_done`
 * bound method's TaskGroup holds F as `_on_completed_fut`.
 *
 * Coroutine stacks: <= 3.10 the generator's gi_frame is a PyFrameObject
 * whose awaited object (in `await` / `yield from`, i.e. the next opcode is
 * YIELD_FROM) is the top of its value stack; 3.11+ the frame is embedded
 * (gi_iframe) and the awaited object is localsplus[stacktop - 1] while
 * the frame state (3.13) or the RESUME after prev_instr (3.11, 3.12) says
 * it is suspended in `await`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "coro.h"
#include "../grow.h"
#include "tasks.h"

#define MAX_GATHER_DEPTH 64

/* Is a native lister listing C tasks (3.14+)?  Then this one lists only
 * pure-Python tasks, and CPython records the edges between C tasks. */
static bool native_lists(const struct tctx *c)
{
	return c->listers[0] != &pyd_module_lister;
}

/* A task's thread: the one running its loop.  A thousand tasks share one
 * loop: its attribute dict is searched once per listing. */
static long loop_thread(struct tctx *c, uint64_t loop)
{
	uint64_t tid_obj;
	int64_t pth;
	if (loop && loop == c->last_loop)
		return c->last_loop_thread;
	if (!loop || pyd_obj_attr(c->s, loop, "_thread_id", &tid_obj) ||
	    !tid_obj || pyd_long_value(c->s, tid_obj, &pth))
		return -1;
	c->last_loop = loop;
	c->last_loop_thread = tasks_thread_by_pthread(c, (uint64_t)pth);
	return c->last_loop_thread;
}

/* A pending pure-Python task's attributes; false if it is not one. */
static bool py_task(struct tctx *c, uint64_t id, struct raw_task *r)
{
	uint64_t state;
	/* Future._state is a class attribute (PENDING) until the future is
	 * done; _fut_waiter a class attribute None. */
	return !pyd_obj_attr(c->s, id, "_state", &state) &&
	       (!state || pyd_str_eq(c->s, state, "PENDING")) &&
	       !pyd_obj_type(c->s, id, &r->type) &&
	       !pyd_obj_attr(c->s, id, "_name", &r->name) &&
	       !pyd_obj_attr(c->s, id, "_coro", &r->coro) &&
	       !pyd_obj_attr(c->s, id, "_fut_waiter", &r->waiter) &&
	       !pyd_obj_attr(c->s, id, "_loop", &r->loop);
}

/* A pending C task's fields; false if it is not one. */
static bool c_task(struct tctx *c, uint64_t id, struct raw_task *r)
{
	uint8_t obj[MAX_TASK_SIZE];
	if (c->tf.size <= 0 || c->tf.size > (int64_t)sizeof obj ||
	    tasks_rd(c, id, obj, (size_t)c->tf.size))
		return false;
	tasks_fields(c, obj, r);
	r->loop = pyd_u64_at(obj, (uint64_t)c->L->objects.fut_loop);
	return r->state == FUT_PENDING;
}

/* Record a pending task (anything else is skipped). */
static enum pyd_err module_add(struct tctx *c, uint64_t id)
{
	struct raw_task t = {.id = id};
	if (!id || tasks_find_task(c, id) >= 0)
		return PYD_OK;
	switch (tasks_kind(c, id)) {
	case KIND_PYTASK:
		t.py = true;
		if (!py_task(c, id, &t))
			return PYD_OK;
		break;
	case KIND_TASK:
		/* 3.14+: C tasks come from the native lists only. */
		if (native_lists(c) || !c_task(c, id, &t))
			return PYD_OK;
		break;
	default:
		return PYD_OK;
	}
	enum pyd_err err;
	struct raw_task *r = tasks_add(c, id, &err);
	if (!r)
		return err;
	t.state = FUT_PENDING;
	t.thread = loop_thread(c, t.loop);
	t.lister = r->lister;
	*r = t;
	return PYD_OK;
}

/* The tasks in a WeakSet (weak = true) or a set. */
static enum pyd_err add_set(struct tctx *c, uint64_t set, bool weak)
{
	uint64_t *keys;
	size_t n;
	enum pyd_err err;
	if (!set)
		return PYD_OK;
	if (weak) {
		uint64_t data;
		if ((err = pyd_obj_attr(c->s, set, "data", &data)))
			return err;
		set = data;
		if (!set)
			return PYD_E_READ;
	}
	if ((err = pyd_set_items(c->s, set, PYD_MAX_ITEMS, &keys, &n, NULL)))
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t t = keys[i];
		if (weak && pyd_weakref_get(c->s, keys[i], &t))
			continue;
		err = module_add(c, t);
	}
	free(keys);
	return err;
}

/* The tasks of one interpreter's asyncio.tasks module. */
static enum pyd_err module_list(struct tctx *c, uint64_t interp,
			       struct pyd_task_graph *g)
{
	uint64_t md;
	enum pyd_err err = pyd_module_dict(c->s, interp, "asyncio.tasks", &md);
	if (err)
		return err;
	if (!md)
		return PYD_OK; /* this interpreter never imported asyncio */
	g->asyncio_loaded = true;
	uint64_t *kv;
	size_t n;
	if ((err = pyd_dict_items(c->s, md, PYD_MAX_ITEMS, &kv, &n, NULL)))
		return err;
	uint64_t all, sched, eager, current, pytask;
	pyd_kv_find(c->s, md, kv, n, "_all_tasks", &all);
	pyd_kv_find(c->s, md, kv, n, "_scheduled_tasks", &sched);
	pyd_kv_find(c->s, md, kv, n, "_eager_tasks", &eager);
	pyd_kv_find(c->s, md, kv, n, "_current_tasks", &current);
	pyd_kv_find(c->s, md, kv, n, "_PyTask", &pytask);
	free(kv);
	if (pytask && c->npytask_types < sizeof c->pytask_types /
						 sizeof *c->pytask_types)
		c->pytask_types[c->npytask_types++] = pytask;
	size_t first = c->nraw;
	/* The running tasks first: a task in two places is listed once. */
	if (current && !pyd_dict_items(c->s, current, PYD_MAX_ITEMS, &kv, &n, NULL)) {
		for (size_t i = 0; i < n && !err; i++)
			err = module_add(c, kv[2 * i + 1]);
		for (size_t i = 0; i < n; i++) {
			long k = tasks_find_task(c, kv[2 * i + 1]);
			if (k >= (long)first)
				c->raw[k].running = true;
		}
		free(kv);
	}
	if (!err)
		err = add_set(c, all, true);
	if (!err)
		err = add_set(c, sched, true);
	if (!err)
		err = add_set(c, eager, false);
	return err;
}

/* A listed task's state and coroutine, read again. */
static enum pyd_task_state module_state_now(struct tctx *c,
					    const struct raw_task *r,
					    uint64_t *coro)
{
	uint64_t state;
	if (!r->py)
		return tasks_state_now(c, r, coro);
	if (pyd_obj_attr(c->s, r->id, "_coro", coro) ||
	    pyd_obj_attr(c->s, r->id, "_state", &state))
		return PYD_TASK_UNKNOWN;
	return !state || pyd_str_eq(c->s, state, "PENDING") ? PYD_TASK_PENDING
	       : pyd_str_eq(c->s, state, "CANCELLED")      ? PYD_TASK_CANCELLED
	       : pyd_str_eq(c->s, state, "FINISHED")       ? PYD_TASK_DONE
							   : PYD_TASK_UNKNOWN;
}

/* The tasks whose done-callbacks lead to a future: (future, task index)
 * pairs. */
struct cb_edge {
	uint64_t fut;
	uint32_t task;
};

struct cb_edges {
	struct cb_edge *v;
	size_t n, cap;
};

static bool cb_push(struct cb_edges *e, uint64_t fut, size_t task)
{
	if (!fut)
		return true;
	if (!pyd_grow((void **)&e->v, &e->cap, e->n + 1, sizeof *e->v))
		return false;
	e->v[e->n++] = (struct cb_edge){fut, (uint32_t)task};
	return true;
}

static enum pyd_err callback(struct tctx *c, uint64_t cb, size_t task,
				 struct cb_edges *e)
{
	const struct py_objects *o = &c->L->objects;
	enum obj_kind k = tasks_kind(c, cb);
	if (k == KIND_METHOD) {
		/* TaskGroup._on_task_done: its TaskGroup's completion future. */
		uint64_t self, fut;
		if (pyd_read_ptr(c->s, cb + (uint64_t)o->meth_self, &self) || !self ||
		    pyd_obj_attr(c->s, self, "_on_completed_fut", &fut))
			return PYD_OK;
		return cb_push(e, fut, task) ? PYD_OK : PYD_E_NOMEM;
	}
	if (k != KIND_FUNC)
		return PYD_OK;
	/* shield()'s _inner_done_callback: the outer future is in a cell. */
	uint64_t name, closure, *cells;
	size_t n;
	if (pyd_read_ptr(c->s, cb + (uint64_t)o->func_name, &name) ||
	    !pyd_str_eq(c->s, name, "_inner_done_callback") ||
	    pyd_read_ptr(c->s, cb + (uint64_t)o->func_closure, &closure) ||
	    !closure || pyd_seq_items(c->s, closure, false, PYD_MAX_ITEMS, &cells, &n, NULL))
		return PYD_OK;
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t v;
		if (!pyd_read_ptr(c->s, cells[i] + (uint64_t)o->cell_ref, &v) &&
		    !cb_push(e, v, task))
			err = PYD_E_NOMEM;
	}
	free(cells);
	return err;
}

static enum pyd_err callbacks(struct tctx *c, size_t task,
				  struct cb_edges *e)
{
	const struct py_objects *o = &c->L->objects;
	uint64_t cb0, list, *items;
	size_t n;
	uint64_t id = c->raw[task].id;
	enum pyd_err err = PYD_OK;
	if (c->raw[task].py) {
		if (pyd_obj_attr(c->s, id, "_callbacks", &list) || !list ||
		    pyd_seq_items(c->s, list, true, PYD_MAX_ITEMS, &items, &n, NULL))
			return PYD_OK;
	} else {
		if (!pyd_read_ptr(c->s, id + (uint64_t)o->fut_callback0, &cb0) &&
		    cb0)
			err = callback(c, cb0, task, e);
		if (err ||
		    pyd_read_ptr(c->s, id + (uint64_t)o->fut_callbacks, &list) ||
		    !list || pyd_seq_items(c->s, list, true, PYD_MAX_ITEMS, &items, &n, NULL))
			return err;
	}
	/* Items are (callback, context) tuples. */
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t cb;
		if (!pyd_tuple_item(c->s, items[i], 0, &cb) && cb)
			err = callback(c, cb, task, e);
	}
	free(items);
	return err;
}

static enum pyd_err edge(struct tctx *c, size_t waiter, long target)
{
	if (target < 0 || (size_t)target == waiter)
		return PYD_OK;
	if (native_lists(c) && !c->raw[waiter].py && !c->raw[target].py)
		return PYD_OK; /* CPython's own awaited_by has it (or not) */
	return tasks_edge(c, (size_t)target, waiter);
}

/* Edges from a gather() future's children, recursively. */
static enum pyd_err gather(struct tctx *c, size_t waiter, uint64_t fut,
			       int depth, bool *was_gather)
{
	uint64_t children, *items;
	size_t n;
	*was_gather = false;
	if (depth > MAX_GATHER_DEPTH ||
	    pyd_obj_attr(c->s, fut, "_children", &children) || !children ||
	    pyd_seq_items(c->s, children, true, PYD_MAX_ITEMS, &items, &n, NULL))
		return PYD_OK;
	*was_gather = true;
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < n && !err; i++) {
		bool sub;
		enum obj_kind k = tasks_kind(c, items[i]);
		if (k == KIND_TASK || k == KIND_PYTASK)
			err = edge(c, waiter, tasks_find_task(c, items[i]));
		else
			err = gather(c, waiter, items[i], depth + 1, &sub);
	}
	free(items);
	return err;
}

static enum pyd_err module_edges(struct tctx *c)
{
	struct cb_edges e = {0};
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < c->nraw && !err; i++)
		err = callbacks(c, i, &e);
	for (size_t i = 0; i < c->nraw && !err; i++) {
		uint64_t w = c->raw[i].waiter;
		bool gathered;
		if (!w)
			continue;
		enum obj_kind k = tasks_kind(c, w);
		if (k == KIND_NONE)
			continue;
		if (k == KIND_TASK || k == KIND_PYTASK) {
			err = edge(c, i, tasks_find_task(c, w));
			continue;
		}
		if ((err = gather(c, i, w, 0, &gathered)) || gathered)
			continue;
		for (size_t k = 0; k < e.n && !err; k++)
			if (e.v[k].fut == w)
				err = edge(c, i, (long)e.v[k].task);
	}
	free(e.v);
	return err;
}

const struct task_lister pyd_module_lister = {
	.list = module_list,
	.state_now = module_state_now,
	.derived_edges = module_edges,
};
