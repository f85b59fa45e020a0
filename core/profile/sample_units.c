/*
 * The rounds of the modes whose units are not threads: asyncio tasks
 * (each task's stack joined to the tasks awaiting it) and greenlets
 * (running ones under the greenlet their thread runs, switched-out ones
 * where they switched away).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "rounds.h"

/* ---- async mode ---- */

/* It needs the task decoder. */
enum pyd_err pyd_open_tasks(struct pyd_sampler *sp)
{
	return pyd_tasks_supported(sp->s) ? PYD_OK : PYD_E_UNSUPPORTED;
}

/* The task's coroutine chain, a boundary frame naming it, then the same
 * for the task awaiting it, up to a root task (or a cycle). */
static bool task_stack(struct pyd_sampler *sp, const struct pyd_task_graph *g,
                       long k)
{
	sp->fb.n = 0;
	for (size_t hops = 0; k >= 0 && hops <= g->ntasks; hops++) {
		const struct pyd_task *t = &g->tasks[k];
		if (!pyd_frames_push_unit(&sp->fb, t->coro_stack, t->ncoro, sp->names[k]))
			return false;
		k = sp->waiter[k];
	}
	return true;
}

/* Each task's name as the profile keeps it: the graph's copies go with
 * the round, the profile's stay, so its frames can be found by address. */
static bool intern_names(struct pyd_sampler *sp, const struct pyd_task_graph *g)
{
	if (!pyd_grow((void **)&sp->names, &sp->names_cap, g->ntasks,
		      sizeof *sp->names))
		return false;
	for (size_t i = 0; i < g->ntasks; i++)
		if (!(sp->names[i] = pyd_profile_intern(sp->prof, g->tasks[i].name)))
			return false;
	return true;
}

static const char *thread_name(const struct pyd_sampler *sp, int64_t tid)
{
	for (size_t i = 0; i < sp->nth; i++)
		if (sp->th[i].tid == tid)
			return sp->th[i].name;
	return "";
}

/* The task graph, read through the prefetching source. */
static enum pyd_err read_tasks(struct pyd_sampler *sp, struct pyd_task_graph *g)
{
	*g = (struct pyd_task_graph){0};
	enum pyd_err err = pyd_prefetch_pass(&sp->pf);
	if (err)
		return err;
	const struct pyd_memsrc *own = sp->s->src;
	sp->s->src = &sp->pf.layer.src;
	err = pyd_dump_tasks_batched(sp->s, g);
	sp->s->src = own;
	return err;
}

/* The tasks in an order where each follows the task awaiting it: a task's
 * stack is its waiter's with its own frames inside, so the profile finds
 * the outer part on the path it added last and walks only the new frames.
 * Depth first from the tasks nobody awaits; then those only cycles reach.
 * Into sp->order[0..ntasks); each task's waiter (-1: none) into
 * sp->waiter, for task_stack's hops. */
static bool await_order(struct pyd_sampler *sp, const struct pyd_task_graph *g)
{
	size_t n = g->ntasks;
	if (!pyd_grow((void **)&sp->order, &sp->order_cap, 5 * n + 1,
		      sizeof *sp->order))
		return false;
	/* first[w]: the head of the list of tasks w is awaited by first
	 * (first[n]: the roots'); next[i]: i's sibling; then a stack */
	long *order = sp->order, *first = order + n, *next = first + n + 1,
	     *stack = next + n, *waiter = sp->waiter = stack + n;
	for (size_t i = 0; i <= n; i++)
		first[i] = -1;
	for (size_t i = n; i-- > 0;) {
		const struct pyd_task *t = &g->tasks[i];
		long w = waiter[i] =
		    t->nawaited_by ? pyd_task_find(g, t->awaited_by[0]) : -1;
		size_t head = w >= 0 && (size_t)w != i ? (size_t)w : n;
		next[i] = first[head];
		first[head] = (long)i;
	}
	size_t done = 0, depth = 0;
	for (long r = first[n]; r >= 0; r = next[r]) {
		stack[depth++] = r;
		while (depth) {
			long k = stack[--depth];
			order[done++] = k;
			for (long c = first[k]; c >= 0; c = next[c])
				stack[depth++] = c;
			first[k] = -2; /* placed */
		}
	}
	for (size_t i = 0; i < n && done < n; i++)
		if (first[i] != -2)
			order[done++] = (long)i;
	return true;
}

/* Async mode's check of the code objects used: a read of its own, once a
 * millisecond (the task walk has no batch to carry it). */
static void check_codes(struct pyd_sampler *sp)
{
	if (sp->now - sp->heads_read < HEADS_NS)
		return;
	sp->heads_read = sp->now;
	sp->niov = 0;
	size_t done = 0;
	if (pyd_batch_plan_code_check(sp))
		pyd_readv(sp->s->src, sp->iov, sp->niov, &done);
	pyd_batch_finish_code_check(sp, done);
}

enum pyd_err pyd_round_tasks(struct pyd_sampler *sp, unsigned *nstacks)
{
	check_codes(sp);
	struct pyd_task_graph g;
	enum pyd_err err = read_tasks(sp, &g);
	if (!err && (!intern_names(sp, &g) || !await_order(sp, &g)))
		err = PYD_E_NOMEM;
	for (size_t o = 0; !err && o < g.ntasks; o++) {
		const struct pyd_task *t = &g.tasks[sp->order[o]];
		if (!task_stack(sp, &g, sp->order[o])) {
			err = PYD_E_NOMEM;
			break;
		}
		err = pyd_profile_add_unit(sp->prof, sp->process, t->thread,
		                           thread_name(sp, t->thread), sp->fb.v,
		                           sp->fb.n, !t->running, o);
		(*nstacks)++;
		if (t->running)
			sp->prof->meta.cpu_samples++;
		else
			sp->prof->meta.await_samples++;
	}
	if (!err && g.error)
		err = g.error;
	pyd_task_graph_free(&g);
	return err;
}

/* ---- greenlet mode ---- */

static bool label_greenlets(struct pyd_sampler *sp);

/* It needs greenlet loaded, in a release we read. */
enum pyd_err pyd_open_greenlets(struct pyd_sampler *sp)
{
	enum pyd_err err = pyd_dump_greenlets(sp->s, &sp->gs);
	if (!err && (!sp->gs.loaded || sp->gs.unknown_layout))
		err = PYD_E_UNSUPPORTED;
	if (!err && !label_greenlets(sp))
		err = PYD_E_NOMEM;
	sp->greenlets_found = sp->now;
	return err;
}

/* The greenlets, through the prefetching source: looked for in the
 * collector's lists once a second, the known ones read again in between. */
static enum pyd_err read_greenlets(struct pyd_sampler *sp)
{
	enum pyd_err err = pyd_prefetch_pass(&sp->pf);
	if (err)
		return err;
	const struct pyd_memsrc *own = sp->s->src;
	sp->s->src = &sp->pf.layer.src;
	if (!sp->gs.layout || sp->now - sp->greenlets_found >= REFRESH_NS) {
		pyd_greenlet_set_free(&sp->gs);
		err = pyd_dump_greenlets(sp->s, &sp->gs);
		sp->greenlets_found = sp->now;
		if (!err && !label_greenlets(sp))
			err = PYD_E_NOMEM;
	} else {
		err = pyd_greenlets_reread(sp->s, &sp->gs);
	}
	sp->s->src = own;
	return err;
}

/* Each greenlet's boundary frame: what it was spawned with, else "main"
 * for a thread's main greenlet, else its address; made when greenlets
 * are looked for (a greenlet runs what it was spawned with until it
 * ends: the labels hold between searches). */
static bool label_greenlets(struct pyd_sampler *sp)
{
	const struct pyd_greenlet_set *gs = &sp->gs;
	if (!pyd_grow((void **)&sp->glabels, &sp->glabels_cap, gs->n,
	              sizeof *sp->glabels))
		return false;
	for (size_t i = 0; i < gs->n; i++) {
		const struct pyd_greenlet *g = &gs->g[i];
		if (g->spawned)
			snprintf(sp->glabels[i], GLABEL_MAX, "<greenlet %.80s>",
			         g->spawned);
		else if (g->main)
			snprintf(sp->glabels[i], GLABEL_MAX, "<greenlet main>");
		else
			snprintf(sp->glabels[i], GLABEL_MAX, "<greenlet 0x%llx>",
			         (unsigned long long)g->id);
	}
	return true;
}

/* Put the boundary of the greenlet thread t runs outside its stack. */
static bool mark_greenlet(struct pyd_sampler *sp, struct pyd_sampled_thread *t)
{
	for (size_t i = 0; i < sp->gs.n; i++) {
		const struct pyd_greenlet *g = &sp->gs.g[i];
		if (g->state == PYD_GREENLET_RUNNING && g->thread == t->tid)
			return pyd_frames_push(&t->fb,
			                  (struct pyd_frame){.function =
			                                         sp->glabels[i]});
	}
	return true;
}

/* Thread t's stack under the greenlet it runs, counted as on a CPU
 * unless the OS has the thread asleep: a hub blocked in epoll_wait, a
 * greenlet in a call that blocks its thread, wait.  Its path is not
 * reused: the greenlet a thread runs may change from round to round. */
enum pyd_err pyd_record_greenlet(struct pyd_sampler *sp, struct pyd_sampled_thread *t)
{
	if (!mark_greenlet(sp, t))
		return PYD_E_NOMEM;
	bool waits = t->run == PYD_RUN_IDLE;
	if (waits)
		sp->prof->meta.await_samples++;
	else
		sp->prof->meta.cpu_samples++;
	return pyd_profile_add(sp->prof, sp->process, t->tid, t->name,
	                       t->fb.v, t->fb.n, waits);
}

/* Every thread as in wall mode, under the greenlet it runs; then every
 * switched-out greenlet at the call where it switched away. */
enum pyd_err pyd_round_greenlets(struct pyd_sampler *sp,
                                     unsigned *nstacks)
{
	enum pyd_err err = read_greenlets(sp);
	if (err)
		return err;
	enum pyd_err threads = pyd_round_threads(sp, nstacks);
	if (threads == PYD_E_EXITED || threads == PYD_E_NOMEM)
		return threads;
	for (size_t i = 0; !err && i < sp->gs.n; i++) {
		const struct pyd_greenlet *g = &sp->gs.g[i];
		if (g->state != PYD_GREENLET_SUSPENDED || g->error ||
		    !g->nframes)
			continue;
		sp->fb.n = 0;
		if (!pyd_frames_push_unit(&sp->fb, g->frames, g->nframes, sp->glabels[i]))
			return PYD_E_NOMEM;
		err = pyd_profile_add_unit(sp->prof, sp->process, g->thread,
		                           thread_name(sp, g->thread), sp->fb.v,
		                           sp->fb.n, true, i);
		(*nstacks)++;
		sp->prof->meta.await_samples++;
	}
	return err ? err : threads;
}

