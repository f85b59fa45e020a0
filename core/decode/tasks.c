/*
 * asyncio task graphs: the driver (tasks.h says who does what).
 *
 * One pass lists every interpreter's threads and, through each lister,
 * its tasks; a live target's lists change while we walk them, which shows
 * as a bad read, a NULL link or a task met twice, so a pass that fails is
 * made again.  Then each task is read: its name, state and thread, and
 * its coroutine stack (a running task's from its thread's stack), read
 * again if it changed under us.  The listers add the awaited-by edges,
 * the awaits edges are the same turned around, and await cycles are
 * found and reported, never followed forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../arena.h"
#include "coro.h"
#include "../grow.h"
#include "objects.h"
#include "tasks.h"
#include "walk.h"

/* ---- threads --------------------------------------------------------- */

static enum pyd_err add_thread(struct tctx *c, uint64_t tstate)
{
	if (!pyd_grow((void **)&c->threads, &c->threadcap, c->nthreads + 1,
		      sizeof *c->threads))
		return PYD_E_NOMEM;
	struct thread_info *t = &c->threads[c->nthreads];
	*t = (struct thread_info){.tstate = tstate,
				  .tid = pyd_thread_tid(c->s, tstate)};
	enum pyd_err err = pyd_read_ptr(
		c->s, tstate + (uint64_t)c->L->tstate.thread_id, &t->pthread);
	for (size_t i = 0; !err && i < c->nlisters; i++)
		if (c->listers[i]->thread)
			err = c->listers[i]->thread(c, t);
	if (!err)
		c->nthreads++;
	return err;
}

/* The thread states of one interpreter, oldest first (CPython pushes new
 * ones at the head). */
static enum pyd_err list_threads(struct tctx *c, uint64_t interp)
{
	size_t first = c->nthreads;
	struct pyd_walk w;
	uint64_t ts;
	for (pyd_walk_threads(&w, c->s, interp); pyd_walk_next(&w, &ts);) {
		enum pyd_err err = add_thread(c, ts);
		if (err) {
			pyd_walk_end(&w);
			return err;
		}
	}
	for (size_t i = first, j = c->nthreads; i + 1 < j; i++, j--) {
		struct thread_info tmp = c->threads[i];
		c->threads[i] = c->threads[j - 1];
		c->threads[j - 1] = tmp;
	}
	return w.err;
}

/* ---- listing --------------------------------------------------------- */

/*
 * Pages a one-shot graph keeps: 16 MB, the objects of some 20,000 tasks.
 * A task costs about ten reads of a few dozen bytes (its list node, the
 * task, its coroutines, their frames, its name), and a task's objects sit
 * in a few pages of the allocator's pools next to the others', so the
 * listing and the decoding read through one page cache: each page once,
 * and the decoding sees the moment the listing saw.  A listing read again
 * because the lists changed starts afresh, so that it sees them anew.
 * The sampler's rounds batch through their own prefetcher instead
 * (pyd_dump_tasks_batched).
 */
#define TASK_PAGES 4096
/* A miss reads the 16 KiB holding it (an allocator's pool from 3.10),
 * its neighbours' objects with it: 1,864 calls of a graph of 10,000
 * tasks become 552, 10% faster (8 or 16 pages: no faster). */
#define TASK_AROUND 4

/* The interpreters, newest first as CPython chains them. */
static enum pyd_err list_interps(struct tctx *c, uint64_t *interps,
				 size_t *n)
{
	struct pyd_walk w;
	*n = 0;
	for (pyd_walk_interps(&w, c->s); pyd_walk_next(&w, &interps[*n]);)
		++*n;
	return w.err;
}

/* Every task of every interpreter, once: the main interpreter (the
 * oldest) first, each lister in turn, so that a task two listers see is
 * listed once, by the first. */
static enum pyd_err list_once(struct tctx *c, struct pyd_task_graph *g)
{
	uint64_t *interps = c->interps;
	size_t ninterps;
	c->nraw = 0;
	c->nthreads = 0;
	c->capped = false;
	c->npytask_types = 0;
	c->last_loop = 0;
	if (c->ix.cap)
		memset(c->ix.keys, 0, c->ix.cap * sizeof *c->ix.keys);
	g->asyncio_loaded = c->asyncio_known;
	enum pyd_err err = list_interps(c, interps, &ninterps);
	for (size_t n = ninterps; !err && n-- > 0;) {
		c->first_thread = c->nthreads;
		err = list_threads(c, interps[n]);
		for (c->lister = 0; !err && c->lister < c->nlisters; c->lister++)
			err = c->listers[c->lister]->list(c, interps[n], g);
	}
	return err;
}

/* List until a pass goes through; decode what the last pass listed if
 * none does, and say it may be partial. */
static enum pyd_err list_tasks(struct tctx *c, struct pyd_task_graph *g)
{
	enum pyd_err err = PYD_OK;
	if (!(c->interps = malloc(PYD_MAX_INTERPS * sizeof *c->interps)))
		return PYD_E_NOMEM;
	for (unsigned i = 0; i <= MAX_LIST_RETRIES; i++) {
		if (i && c->paged.on)
			pyd_pagecache_clear(&c->paged.pc);
		err = list_once(c, g);
		if (err != PYD_E_TORN && err != PYD_E_READ)
			break;
		if (i < MAX_LIST_RETRIES)
			g->retries++;
	}
	free(c->interps);
	c->interps = NULL;
	if (err == PYD_E_TORN || err == PYD_E_READ) {
		g->error = err;
		err = PYD_OK;
	}
	g->truncated = c->capped;
	return err;
}

/* ---- reading one task ------------------------------------------------ */

static void reverse_frames(struct pyd_frame *f, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		struct pyd_frame tmp = f[i];
		f[i] = f[n - 1 - i];
		f[n - 1 - i] = tmp;
	}
}

/* The task's name, in the graph's arena. */
static const char *task_name(struct tctx *c, struct pyd_task_graph *g,
			     const struct raw_task *r)
{
	char *name = tasks_name(c, r->name), anon[32];
	if (!name)
		snprintf(anon, sizeof anon, "<task 0x%llx>",
			 (unsigned long long)r->id);
	const char *s = name ? name : anon;
	const char *kept = pyd_arena_dup(g->arena, s, strlen(s) + 1);
	free(name);
	return kept;
}

/* Task i into t, its name and frames in the graph's arena (each task's
 * frames are read into c->fb first: its size known, they take no more). */
static enum pyd_err decode_task(struct tctx *c, struct pyd_task_graph *g,
				size_t i, struct pyd_task *t)
{
	const struct raw_task *r = &c->raw[i];
	const struct thread_info *th =
		r->thread >= 0 ? &c->threads[r->thread] : NULL;
	memset(t, 0, sizeof *t);
	t->id = r->id;
	t->thread = th ? th->tid : 0;
	t->state = tasks_task_state(r->state);
	t->running = r->running && th;
	if (!(t->name = task_name(c, g, r)))
		return PYD_E_NOMEM;
	struct pyd_frame_buf fb = c->fb;
	bool found = false;
	fb.n = 0;
	uint64_t coro = r->coro;
	if (t->running)
		t->error = tasks_running_stack(c, th->tstate, coro, &fb, &found);
	for (unsigned retry = 0; !found; retry++) {
		/* Outermost first: turn it around. */
		fb.n = 0;
		t->error = coro ? tasks_coro_chain(c, coro, &fb) : PYD_OK;
		reverse_frames(fb.v, fb.n);
		if (t->error != PYD_E_READ || retry >= MAX_TASK_RETRIES)
			break;
		/* A live task may have moved on (or finished) while we read:
		 * look again.  A finished one has no stack to show. */
		g->retries++;
		enum pyd_task_state now =
			c->listers[r->lister]->state_now(c, r, &coro);
		if (now != PYD_TASK_PENDING && now != PYD_TASK_UNKNOWN) {
			fb.n = 0;
			t->error = PYD_OK;
			t->state = now;
			break;
		}
	}
	c->fb = fb;
	if (fb.n && !(t->coro_stack = pyd_arena_dup(g->arena, fb.v,
						     fb.n * sizeof *fb.v)))
		return PYD_E_NOMEM;
	t->ncoro = fb.n;
	return t->error == PYD_E_EXITED || t->error == PYD_E_NOMEM ? t->error
								   : PYD_OK;
}

/* ---- the graph ------------------------------------------------------- */

/* Grow the per-task arrays to the number of raw tasks (awaiters found
 * while decoding add tasks). */
static enum pyd_err grow_tasks(struct tctx *c, struct pyd_task_graph *g)
{
	if (c->nraw <= c->abcap)
		return PYD_OK;
	/* Three arrays of one capacity, c->abcap: set once all three grew. */
	size_t tcap = c->abcap, acap = c->abcap, ncap = c->abcap;
	if (!pyd_grow((void **)&g->tasks, &tcap, c->nraw, sizeof *g->tasks) ||
	    !pyd_grow((void **)&c->ab, &acap, c->nraw, sizeof *c->ab) ||
	    !pyd_grow((void **)&c->nab, &ncap, c->nraw, sizeof *c->nab))
		return PYD_E_NOMEM;
	memset(c->ab + c->abcap, 0, (ncap - c->abcap) * sizeof *c->ab);
	memset(c->nab + c->abcap, 0, (ncap - c->abcap) * sizeof *c->nab);
	c->abcap = ncap;
	return PYD_OK;
}

static enum pyd_err build_awaits(struct tctx *c, struct pyd_task_graph *g)
{
	size_t n = g->ntasks;
	size_t *count = calloc(n ? n : 1, sizeof *count);
	if (!count)
		return PYD_E_NOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < c->nab[i]; k++)
			count[c->ab[i][k]]++;
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < n && !err; i++) {
		struct pyd_task *t = &g->tasks[i];
		if (c->nab[i]) {
			t->awaited_by = pyd_arena_alloc(
				g->arena, c->nab[i] * sizeof *t->awaited_by);
			if (!t->awaited_by)
				err = PYD_E_NOMEM;
			for (size_t k = 0; !err && k < c->nab[i]; k++)
				t->awaited_by[k] = c->raw[c->ab[i][k]].id;
			t->nawaited_by = err ? 0 : c->nab[i];
		}
		if (!err && count[i] &&
		    !(t->awaits = pyd_arena_alloc(g->arena,
						  count[i] * sizeof *t->awaits)))
			err = PYD_E_NOMEM;
	}
	for (size_t i = 0; i < n && !err; i++)
		for (size_t k = 0; k < c->nab[i]; k++) {
			struct pyd_task *w = &g->tasks[c->ab[i][k]];
			w->awaits[w->nawaits++] = g->tasks[i].id;
		}
	free(count);
	return err;
}

static enum pyd_err add_cycle(struct pyd_task_graph *g, const uint32_t *path,
			      size_t from, size_t to, uint32_t back)
{
	if (g->ncycles >= MAX_CYCLES)
		return PYD_OK;
	if (!pyd_grow_one((void **)&g->cycles, g->ncycles, sizeof *g->cycles))
		return PYD_E_NOMEM;
	size_t n = to - from + 1;
	uint64_t *ids = malloc(n * sizeof *ids);
	if (!ids)
		return PYD_E_NOMEM;
	for (size_t i = from; i < to; i++)
		ids[i - from] = g->tasks[path[i]].id;
	ids[n - 1] = g->tasks[back].id;
	g->cycles[g->ncycles++] = (struct pyd_task_cycle){ids, n};
	return PYD_OK;
}

/*
 * Await cycles: depth-first over the awaits edges (iterative: the graph
 * can be deep); a back edge to a task on the current path closes a
 * cycle, recorded as the path from that task back to it.
 */
static enum pyd_err find_cycles(struct tctx *c, struct pyd_task_graph *g)
{
	size_t n = g->ntasks;
	uint8_t *color = calloc(n ? n : 1, 1); /* 0 new, 1 on path, 2 done */
	uint32_t *path = malloc((n ? n : 1) * sizeof *path);
	size_t *edge = malloc((n ? n : 1) * sizeof *edge);
	size_t *pos = malloc((n ? n : 1) * sizeof *pos);
	enum pyd_err err = color && path && edge && pos ? PYD_OK : PYD_E_NOMEM;
	for (size_t root = 0; root < n && !err; root++) {
		if (color[root])
			continue;
		size_t depth = 0;
		path[depth] = (uint32_t)root;
		edge[depth] = 0;
		pos[root] = depth++;
		color[root] = 1;
		while (depth && !err) {
			uint32_t v = path[depth - 1];
			const struct pyd_task *t = &g->tasks[v];
			if (edge[depth - 1] == t->nawaits) {
				color[v] = 2;
				depth--;
				continue;
			}
			long w = tasks_find_task(c, t->awaits[edge[depth - 1]++]);
			if (w < 0)
				continue;
			if (color[w] == 1)
				err = add_cycle(g, path, pos[w], depth, (uint32_t)w);
			else if (color[w] == 0) {
				color[w] = 1;
				pos[w] = depth;
				path[depth] = (uint32_t)w;
				edge[depth++] = 0;
			}
		}
	}
	free(color);
	free(path);
	free(edge);
	free(pos);
	return err;
}

static enum pyd_err decode_all(struct tctx *c, struct pyd_task_graph *g)
{
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < c->nraw && !err; i++) {
		if ((err = grow_tasks(c, g)))
			break;
		g->ntasks = i + 1; /* decode_task leaves it freeable */
		err = decode_task(c, g, i, &g->tasks[i]);
		for (c->lister = 0; !err && c->lister < c->nlisters; c->lister++)
			if (c->listers[c->lister]->task_edges)
				err = c->listers[c->lister]->task_edges(
					c, i, &g->tasks[i]);
	}
	for (c->lister = 0; !err && c->lister < c->nlisters; c->lister++)
		if (c->listers[c->lister]->derived_edges)
			err = c->listers[c->lister]->derived_edges(c);
	if (!err)
		err = build_awaits(c, g);
	if (!err)
		err = find_cycles(c, g);
	return err;
}

/* ---- entry points ---------------------------------------------------- */

static void ctx_free(struct tctx *c)
{
	for (size_t i = 0; i < c->abcap; i++)
		free(c->ab[i]);
	free(c->ab);
	free(c->nab);
	free(c->raw);
	free(c->threads);
	free(c->fb.v);
	tasks_index_free(&c->ix);
	free(c);
}

/* Who lists tasks: the interpreter's native lists where the layout
 * describes them, and the asyncio module's state for the tasks those
 * lists do not hold (all before 3.14; pure-Python ones from 3.14). */
static size_t pick_listers(const struct py_layout *L,
			   const struct task_lister **out)
{
	size_t n = 0;
	if (py_layout_has_tasks(L))
		out[n++] = &pyd_native_lister;
	if (py_layout_has_module_tasks(L) || py_layout_has_py_tasks(L))
		out[n++] = &pyd_module_lister;
	return n;
}

bool pyd_tasks_supported(const struct pyd_session *s)
{
	return s->rt.runtime_addr && (py_layout_has_module_tasks(&s->layout) ||
				      py_layout_has_tasks(&s->layout));
}

/* Event loops other than asyncio, by the module that is imported once
 * one is used: named where asyncio is not, so that a task listing says
 * what it found rather than only that there are no asyncio tasks. */
static const char *const other_loops[] = {"trio", "curio", "anyio",
					  "gevent", "eventlet",
					  "twisted.internet.reactor"};

static const char *other_loop(struct pyd_session *s)
{
	struct pyd_walk w;
	uint64_t interp, md;
	const char *found = NULL;
	for (pyd_walk_interps(&w, s); !found && pyd_walk_next(&w, &interp);)
		for (size_t i = 0;
		     !found && i < sizeof other_loops / sizeof *other_loops; i++)
			if (!pyd_module_dict(s, interp, other_loops[i], &md) &&
			    md)
				found = other_loops[i];
	pyd_walk_end(&w);
	return found;
}

static enum pyd_err dump_tasks(struct pyd_session *s, struct pyd_task_graph *g,
			       bool paged_passes)
{
	memset(g, 0, sizeof *g);
	if (!pyd_tasks_supported(s))
		return PYD_E_UNSUPPORTED;
	struct tctx *c = calloc(1, sizeof *c);
	if (!c || !(g->arena = calloc(1, sizeof *g->arena))) {
		free(c);
		return PYD_E_NOMEM;
	}
	c->s = s;
	c->L = &s->layout;
	c->nlisters = pick_listers(c->L, c->listers);
	if (paged_passes)
		pyd_session_paged(s, &c->paged, TASK_PAGES);
	if (c->paged.on)
		c->paged.pc.around = TASK_AROUND;
	c->tf = tasks_builtin_fields(c->L);
	c->gen_size = tasks_gen_size(c->L);
	enum pyd_err err = PYD_OK;
	bool none = false;
	for (size_t l = 0; !err && !none && l < c->nlisters; l++)
		if (c->listers[l]->open)
			err = c->listers[l]->open(c, &none);
	if (!err && !none)
		err = list_tasks(c, g);
	if (!err && !none)
		err = decode_all(c, g);
	if (paged_passes)
		pyd_session_unpaged(s, &c->paged);
	/* The dump's (a sampler's rounds ask asyncio only) */
	if (!err && !g->asyncio_loaded && paged_passes)
		g->other_loop = other_loop(s);
	/* The graph keeps the index: g->tasks[i] is what raw[i] became. */
	if (!err && (g->index = malloc(sizeof *g->index))) {
		*g->index = c->ix;
		c->ix = (struct pyd_task_index){0};
	}
	ctx_free(c);
	if (err)
		pyd_task_graph_free(g);
	return err;
}

enum pyd_err pyd_dump_tasks(struct pyd_session *s, struct pyd_task_graph *g)
{
	return dump_tasks(s, g, true);
}

enum pyd_err pyd_dump_tasks_batched(struct pyd_session *s,
				    struct pyd_task_graph *g)
{
	return dump_tasks(s, g, false);
}

void pyd_task_graph_free(struct pyd_task_graph *g)
{
	if (g->arena)
		pyd_arena_free(g->arena);
	free(g->arena);
	free(g->tasks);
	for (size_t i = 0; i < g->ncycles; i++)
		free(g->cycles[i].ids);
	free(g->cycles);
	if (g->index)
		tasks_index_free(g->index);
	free(g->index);
	memset(g, 0, sizeof *g);
}
