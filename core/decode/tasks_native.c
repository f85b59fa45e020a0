/*
 * Lister "tasks from the interpreter's native task lists" (3.14+).
 *
 * Since 3.14 every C Task (asyncio.Task and its subclasses) links itself,
 * while pending, into a list headed in the thread state of the thread
 * that created it (_PyThreadStateImpl.asyncio_tasks_head); when a thread
 * exits its list is moved to the interpreter's (PyInterpreterState.
 * asyncio_tasks_head).  The thread state also names the task running
 * right now (asyncio_running_task).  Where those members are, and the
 * Task's name, coroutine, awaited-by and list node, the _asyncio module
 * publishes (asyncio_offsets.h); where generators keep their frame and
 * frame state, and how sets and ints look, _Py_DebugOffsets does.
 *
 * Who awaits whom CPython records itself between C tasks: a task's
 * awaited_by is NULL, one task, or a set of tasks (awaited_by_is_set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "coro.h"
#include "tasks.h"

/* ---- finding the debug offsets --------------------------------------- */

static bool module_mapped(struct pyd_session *s)
{
	const struct pyd_mapping *maps;
	size_t n;
	if (!s->src->mappings || s->src->mappings(s->src->ctx, &maps, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *base = maps[i].path ? strrchr(maps[i].path, '/') : NULL;
		if (base && strncmp(base + 1, "_asyncio.", 9) == 0)
			return true;
	}
	return false;
}

/* Does the source name the files it maps?  Only then does an _asyncio
 * module missing from them say anything. */
static bool files_named(struct pyd_session *s)
{
	const struct pyd_mapping *maps;
	size_t n;
	if (!s->src->mappings || s->src->mappings(s->src->ctx, &maps, &n))
		return false;
	for (size_t i = 0; i < n; i++)
		if (maps[i].path)
			return true;
	return false;
}

static enum pyd_err native_open(struct tctx *c, bool *none)
{
	struct pyd_session *s = c->s;
	/* No binaries to find the section in (a core from 3.14+ found by
	 * its cookie), or the _asyncio module's file is out of reach (lldb
	 * does not load a chroot's modules): look for the block itself. */
	if (!s->rt.asyncio_debug_addr &&
	    (!s->rt.py_version_addr || module_mapped(s)))
		s->rt.asyncio_debug_addr = pyd_asyncio_find_block(s);
	if (!s->rt.asyncio_debug_addr) {
		/* Not found.  With the interpreter's binary read (Py_Version
		 * was resolved from it) and no _asyncio module mapped, the
		 * target never imported asyncio: it has no tasks.  Else the
		 * module's file could not be read (a core without it). */
		*none = s->rt.py_version_addr && files_named(s) &&
			!module_mapped(s);
		return *none ? PYD_OK : PYD_E_READ;
	}
	uint8_t raw[PYD_ASYNCIO_OFFSETS_SIZE];
	enum pyd_err err = pyd_read(s->src, s->rt.asyncio_debug_addr, raw,
				    sizeof raw);
	if (!err && pyd_asyncio_offsets_parse(raw, sizeof raw, &c->ao))
		err = PYD_E_READ;
	c->asyncio_known = !err;
	/* The published TaskObj fields; what a task waits on is not
	 * published: the built-in table's, for pure-Python tasks' edges. */
	const struct pyd_asyncio_offsets *o = &c->ao;
	struct task_fields tf = {(int64_t)o->task_size, (int64_t)o->task_name,
				 (int64_t)o->task_coro, o->task_state, -1};
	if (!err && py_layout_has_py_tasks(c->L))
		tf.waiter = tasks_builtin_fields(c->L).waiter;
	if (!err)
		c->tf = tf;
	return err;
}

/* ---- listing --------------------------------------------------------- */

/* What the running loop and task of a thread state are. */
static enum pyd_err native_thread(struct tctx *c, struct thread_info *t)
{
	uint64_t loop = 0, running = 0;
	enum pyd_err err;
	if ((err = tasks_rd(c, t->tstate + c->ao.tstate_running_loop, &loop,
			    8)) ||
	    (err = tasks_rd(c, t->tstate + c->ao.tstate_running_task, &running,
			    8)))
		return err;
	t->running_task = loop ? running : 0;
	return PYD_OK;
}

/* Record the task whose TaskObj is in obj, held by thread index thread
 * (-1: none).  PYD_E_TORN if it is listed already (a list that changed
 * while we walked it). */
static enum pyd_err add_raw(struct tctx *c, uint64_t id, const uint8_t *obj,
			    long thread)
{
	const struct pyd_asyncio_offsets *o = &c->ao;
	enum pyd_err err;
	struct raw_task *r = tasks_add(c, id, &err);
	if (!r)
		return err;
	tasks_fields(c, obj, r);
	r->awaited_by = pyd_u64_at(obj, o->task_awaited_by);
	r->awaited_by_is_set = obj[o->task_awaited_by_is_set] != 0;
	r->thread = thread;
	r->running = thread >= 0 && c->threads[thread].running_task == id;
	bool known = false;
	for (size_t i = 0; i < c->ntask_types; i++)
		known |= c->task_types[i] == r->type;
	if (!known &&
	    c->ntask_types < sizeof c->task_types / sizeof *c->task_types)
		c->task_types[c->ntask_types++] = r->type;
	return PYD_OK;
}

/* Walk one circular list of tasks (the head is a struct llist_node in a
 * thread or interpreter state). */
static enum pyd_err walk_list(struct tctx *c, uint64_t head, long thread)
{
	const struct pyd_asyncio_offsets *o = &c->ao;
	uint8_t obj[MAX_TASK_SIZE];
	uint64_t next;
	enum pyd_err err = tasks_rd(c, head + (uint64_t)c->L->llist.next, &next,
				    sizeof next);
	for (size_t n = 0; !err && next != head && !c->capped; n++) {
		if (!next || n >= PYD_MAX_TASKS)
			return PYD_E_TORN;
		uint64_t id = next - o->task_node;
		if ((err = tasks_rd(c, id, obj, o->task_size)))
			break;
		/* Only a Task links itself into these lists. */
		if (!obj[o->task_is_task])
			return PYD_E_TORN;
		if ((err = add_raw(c, id, obj, thread)))
			break;
		next = pyd_u64_at(obj,
				  o->task_node + (uint64_t)c->L->llist.next);
	}
	return err;
}

/* The lists of the interpreter's threads, then its own (tasks of threads
 * that have exited). */
static enum pyd_err native_list(struct tctx *c, uint64_t interp,
				struct pyd_task_graph *g)
{
	enum pyd_err err = PYD_OK;
	(void)g;
	for (size_t i = c->first_thread; !err && i < c->nthreads; i++)
		err = walk_list(c, c->threads[i].tstate + c->ao.tstate_tasks_head,
				(long)i);
	return err ? err : walk_list(c, interp + c->ao.interp_tasks_head, -1);
}

/* ---- awaited-by ------------------------------------------------------ */

/* Index of the task `id` awaited by another: listed, or a task that no
 * list holds (finished, or created by a thread state we could not walk):
 * add it.  -1 if it is no task. */
static long awaiter_index(struct tctx *c, uint64_t id, enum pyd_err *err)
{
	long i = tasks_find_task(c, id);
	if (i >= 0 || !id)
		return i;
	uint8_t obj[MAX_TASK_SIZE];
	const struct pyd_asyncio_offsets *o = &c->ao;
	if (tasks_rd(c, id, obj, o->task_size) ||
	    tasks_kind_of_type(c, pyd_u64_at(obj, (uint64_t)c->L->object.ob_type)) !=
		    KIND_TASK ||
	    !obj[o->task_is_task])
		return -1;
	enum pyd_err e = add_raw(c, id, obj, -1);
	if (e) {
		if (e != PYD_E_TORN)
			*err = e;
		return -1;
	}
	return (long)c->nraw - 1;
}

/* The tasks awaiting task i: its awaited_by, one task or a set of them. */
static enum pyd_err native_edges(struct tctx *c, size_t i, struct pyd_task *t)
{
	const struct raw_task *r = &c->raw[i];
	uint64_t one = r->awaited_by, *ids = &one;
	size_t n = 1;
	if (r->py || !r->awaited_by)
		return PYD_OK;
	if (r->awaited_by_is_set) {
		enum pyd_err e = pyd_set_items(c->s, r->awaited_by, PYD_MAX_ITEMS, &ids, &n, NULL);
		if (e == PYD_E_EXITED || e == PYD_E_NOMEM)
			return e;
		if (e && !t->error)
			t->error = e;
	}
	enum pyd_err err = PYD_OK;
	for (size_t k = 0; k < n && !err; k++) {
		long w = awaiter_index(c, ids[k], &err);
		if (w >= 0 && (size_t)w != i)
			err = tasks_edge(c, i, (size_t)w);
	}
	if (ids != &one)
		free(ids);
	return err;
}

const struct task_lister pyd_native_lister = {
	.open = native_open,
	.thread = native_thread,
	.list = native_list,
	.state_now = tasks_state_now,
	.task_edges = native_edges,
};
