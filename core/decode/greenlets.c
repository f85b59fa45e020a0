/*
 * Greenlets (pyd.h): every greenlet object, found in the collector's
 * lists, and the stack each one was suspended in.
 *
 * A greenlet is a PyGreenlet {PyObject_HEAD, weakreflist, dict, pimpl}
 * whose pimpl is a C++ greenlet::Greenlet: a vtable, the object back
 * (_self), the exception state, the switch arguments, the C stack state
 * (_stack_start, stack_stop, ...) and the Python state saved when it
 * switched away (_top_frame, a PyFrameObject, ..., current_frame, the
 * _PyInterpreterFrame it stopped in).  A UserGreenlet adds its run
 * callable and parent, a MainGreenlet (stack_stop == -1) its
 * ThreadState, whose current_greenlet is the one running in that thread.
 * greenlet rewrites a suspended greenlet's frame chain as it switches
 * away so that it holds only Python frames (its frames that lived on the
 * C stack are left out, the outermost one's previous is NULL): the
 * thread-stack walk reads it as it is.
 *
 * The offsets change with greenlet's release and the CPython it is built
 * for: one row per pair in layouts[], each checked on every greenlet
 * (_self must be the object, the top frame object must hold the frame).
 *
 * Which thread a greenlet belongs to, greenlet does not record in a form
 * we can read (its per-thread state is C++ thread-local), but its C stack
 * says: a suspended greenlet's _stack_start is where its thread's stack
 * pointer was when it switched away.  glibc puts a thread's struct
 * pthread (the thread state's thread_id) at the top of the mapping its
 * stack grows down in, so the first struct pthread above that address is
 * its thread's; above the main thread's stack, the highest mapping, there
 * is none.  That needs no mappings, which a core does not list for
 * anonymous memory.  A greenlet's thread is that of the greenlets of its
 * parent chain, all of one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "../memsrc/pagecache.h"
#include "greenlet_layout.h"
#include "objects.h"
#include "pending.h"
#include "walk.h"

static const struct glayout layouts[] = {
    /* greenlet 3.3 (TGreenlet.hpp of 3.3.2) on CPython 3.14 and 3.15:
     * checked on Debian's python3-greenlet 3.3.2 under sid's 3.14 and
     * 3.15, release and debug builds (the same offsets in all four) */
    {"3.3", 14, 15, 24, 32, 8, 56, 64, 104, 144, 184, 192, 184, 8, 24, 200},
};

#define MAIN_STACK_STOP UINT64_MAX /* a MainGreenlet's stack_stop */
/* Types whose greenlet-ness we remember, and the tp_base chain we follow. */
#define TYPE_MEMO 64
#define MAX_BASES 32
/* Pages of the collector's lists kept while walking them: 4 MiB, so
 * that past the first 256 KiB (a small program's walk) the cache is on
 * huge pages (pagecache.c): 1,000 greenlets' walk fills 256 pages, 256
 * faults, where a huge page is one. */
#define GC_PAGES 1024
/* Batches the greenlets found are read ahead in, at most. */
#define READ_PASSES 16

struct gctx {
	struct pyd_session *s;
	const struct glayout *gl;
	uint64_t type; /* greenlet.greenlet */
	struct pyd_greenlet_set *out;
	size_t cap;
	/* Reading known greenlets again (pyd_greenlets_reread): what they
	 * were spawned with is kept from when they were found. */
	bool again;
	struct {
		uint64_t type;
		bool yes;
	} memo[TYPE_MEMO];
	size_t nmemo;
	uint64_t *running; /* the current greenlet of every ThreadState */
	size_t nrunning, running_cap;
	size_t seen;       /* objects of the lists looked at */
	uint64_t *stack;   /* each greenlet's _stack_start, by index */
	/* The Python threads: each one's struct pthread and OS id; the
	 * last one walked is the main thread (the oldest state of the main
	 * interpreter, the last of the lists) */
	struct gthread {
		uint64_t pthread;
		int64_t tid;
	} *threads;
	size_t nthreads, threads_cap;
};

/* ---- the module ------------------------------------------------------ */

/* The dict of module `name` in interp's sys.modules, or 0. */
static uint64_t module_dict(struct pyd_session *s, uint64_t interp,
			    const char *name)
{
	uint64_t md;
	return pyd_module_dict(s, interp, name, &md) ? 0 : md;
}

/* The row for this release on this CPython, or NULL. */
static const struct glayout *find_layout(const struct pyd_session *s,
					 const char *release)
{
	const char *dot = strchr(release, '.');
	dot = dot ? strchr(dot + 1, '.') : NULL;
	size_t n = dot ? (size_t)(dot - release) : strlen(release);
	for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++)
		if (layouts[i].minor_lo <= s->layout.minor &&
		    s->layout.minor <= layouts[i].minor_hi &&
		    strlen(layouts[i].release) == n &&
		    !strncmp(layouts[i].release, release, n))
			return &layouts[i];
	return NULL;
}

/* The layout the debug information of the file holding the greenlet
 * type gives, found once a session; NULL without one. */
static const struct glayout *dwarf_layout(struct pyd_session *s,
					  uint64_t type)
{
	const struct pyd_memsrc *src = s->src;
	const struct pyd_mapping *maps;
	size_t n;
	char used[4096];
	if (s->greenlet_dwarf_state)
		return s->greenlet_dwarf;
	s->greenlet_dwarf_state = -1;
	if (!src->mappings || !src->open_file || src->mappings(src->ctx, &maps, &n))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (type < maps[i].start || type >= maps[i].end || !maps[i].path)
			continue;
		int fd = src->open_file(src->ctx, &maps[i], used, sizeof used);
		struct glayout g;
		if (fd < 0 || !pyd_greenlet_dwarf(fd, used, &g) ||
		    !(s->greenlet_dwarf = malloc(sizeof g)))
			return NULL;
		*s->greenlet_dwarf = g;
		s->greenlet_dwarf_state = 1;
		return s->greenlet_dwarf;
	}
	return NULL;
}

/* greenlet.greenlet and greenlet.__version__ of interp; the layout from
 * the module's debug information where it has some, else our row for
 * its release. */
static void find_module(struct gctx *c, uint64_t interp)
{
	uint64_t md = module_dict(c->s, interp, "greenlet._greenlet"), ver;
	if (!md || pyd_dict_get(c->s, md, "greenlet", &c->type) || !c->type)
		return;
	c->out->loaded = true;
	md = module_dict(c->s, interp, "greenlet");
	char *str = NULL;
	if (md && !pyd_dict_get(c->s, md, "__version__", &ver) && ver &&
	    (str = pyd_read_str(c->s, ver)))
		snprintf(c->out->release, sizeof c->out->release, "%s", str);
	free(str);
	c->gl = dwarf_layout(c->s, c->type);
	c->out->layout_dwarf = c->gl != NULL;
	if (!c->gl)
		c->gl = find_layout(c->s, c->out->release);
	c->out->unknown_layout = !c->gl;
}

/* ---- finding them ---------------------------------------------------- */

/* Is type greenlet.greenlet or a subclass of it? */
static bool is_greenlet_type(struct gctx *c, uint64_t type)
{
	for (size_t i = 0; i < c->nmemo; i++)
		if (c->memo[i].type == type)
			return c->memo[i].yes;
	bool yes = false;
	uint64_t t = type;
	for (int depth = 0; t && depth < MAX_BASES && !yes; depth++) {
		yes = t == c->type;
		if (pyd_read_ptr(c->s, t + (uint64_t)c->s->layout.objects.tp_base,
				 &t))
			break;
	}
	if (c->nmemo < TYPE_MEMO) {
		c->memo[c->nmemo].type = type;
		c->memo[c->nmemo++].yes = yes;
	}
	return yes;
}

static enum pyd_err add_greenlet(struct gctx *c, uint64_t obj)
{
	struct pyd_greenlet_set *g = c->out;
	if (g->n == PYD_MAX_GREENLETS) {
		g->truncated = true;
		return PYD_OK;
	}
	if (!pyd_grow_from((void **)&g->g, &c->cap, g->n + 1, sizeof *g->g, 64))
		return PYD_E_NOMEM;
	g->g[g->n++] = (struct pyd_greenlet){.id = obj};
	return PYD_OK;
}

static int by_id(const void *a, const void *b)
{
	uint64_t x = ((const struct pyd_greenlet *)a)->id;
	uint64_t y = ((const struct pyd_greenlet *)b)->id;
	return (x > y) - (x < y);
}

/* In address order, each once: lists that share objects (corrupt, or
 * changing under a live read) must not list a greenlet twice. */
static void sort_unique(struct pyd_greenlet_set *g)
{
	size_t n = 0;
	if (g->n)
		qsort(g->g, g->n, sizeof *g->g, by_id);
	for (size_t i = 0; i < g->n; i++)
		if (!n || g->g[n - 1].id != g->g[i].id)
			g->g[n++] = g->g[i];
	g->n = n;
}

/*
 * One collector list: PyGC_Head {_gc_next, _gc_prev} right before each
 * object, circular from the head.  Read through a page cache (objects
 * sit in arenas), bounded and loop-checked (Brent): a list that never
 * comes back to its head is corrupt.
 */
static enum pyd_err walk_list(struct gctx *c, const struct pyd_memsrc *src,
			      uint64_t head)
{
	const int32_t ob_type = c->s->layout.object.ob_type;
	uint64_t node, mark = 0, w[4];
	size_t power = 1, steps = 0;
	enum pyd_err err = pyd_read(src, head, &node, 8);
	for (; !err && node & ~7ULL && (node & ~7ULL) != head;
	     node = w[0]) {
		node &= ~7ULL; /* flag bits while a collection runs */
		if (node == mark || ++c->seen > PYD_MAX_GC_OBJECTS) {
			pyd_session_corrupt(c->s, "the collector's list at "
					    "0x%llx does not end",
					    (unsigned long long)head);
			return PYD_E_READ;
		}
		if (++steps == power) {
			mark = node;
			power *= 2;
			steps = 0;
		}
		if ((err = pyd_read(src, node, w, 16 + (size_t)ob_type + 8)))
			break;
		if (is_greenlet_type(c, w[2 + ob_type / 8]) &&
		    (err = add_greenlet(c, node + 16)))
			break;
	}
	return err;
}

/* Note interp's threads for thread_of(). */
static enum pyd_err note_threads(struct gctx *c, uint64_t interp)
{
	const struct py_layout *L = &c->s->layout;
	struct pyd_walk w;
	uint64_t ts;
	enum pyd_err err = PYD_OK;
	for (pyd_walk_threads(&w, c->s, interp); pyd_walk_next(&w, &ts);) {
		struct gthread g = {0};
		if (pyd_read_ptr(c->s, ts + (uint64_t)L->tstate.thread_id,
				 &g.pthread) ||
		    L->tstate.native_thread_id == PYD_NO_FIELD ||
		    pyd_read(c->s->src,
			     ts + (uint64_t)L->tstate.native_thread_id, &g.tid,
			     8))
			continue;
		if (!pyd_grow((void **)&c->threads, &c->threads_cap,
			      c->nthreads + 1, sizeof *c->threads)) {
			err = PYD_E_NOMEM;
			pyd_walk_end(&w);
			break;
		}
		c->threads[c->nthreads++] = g;
	}
	return err ? err : w.err;
}

static enum pyd_err walk_interp(struct gctx *c, const struct pyd_memsrc *src,
				uint64_t interp)
{
	const struct py_layout *L = &c->s->layout;
	uint64_t gc = interp + (uint64_t)L->interp.gc_collecting -
		      (uint64_t)L->gc_lists.collecting;
	enum pyd_err err = PYD_OK;
	for (int i = 0; i < L->gc_lists.lists && !err; i++)
		err = walk_list(c, src, gc + (uint64_t)L->gc_lists.first +
					       (uint64_t)(i * L->gc_lists.stride));
	return err;
}

/* ---- reading one ----------------------------------------------------- */

static uint64_t word(const uint8_t *impl, int32_t off)
{
	return pyd_u64_at(impl, off);
}

/* The name of the function a greenlet runs (a plain function only). */
static char *callable_name(struct pyd_session *s, uint64_t fn)
{
	uint64_t name, t;
	if (!fn || pyd_obj_type(s, fn, &t) ||
	    !pyd_builtin_type_is(s, t, "function") ||
	    pyd_read_ptr(s, fn + (uint64_t)s->layout.objects.func_name, &name))
		return NULL;
	return pyd_read_str(s, name);
}

/* The frames a suspended greenlet stopped in. */
static enum pyd_err suspended_frames(struct gctx *c, const uint8_t *impl,
				     struct pyd_greenlet *g)
{
	uint64_t top = word(impl, c->gl->top_frame), f_frame;
	uint64_t cur = word(impl, c->gl->current_frame);
	if (!top)
		return PYD_OK; /* it switched away before running Python */
	enum pyd_err err = pyd_read_ptr(c->s, top + (uint64_t)c->gl->f_frame,
					&f_frame);
	if (err || f_frame != cur)
		return err ? err : PYD_E_READ;
	struct pyd_frame_buf fb = {.v = g->frames, .cap = g->frames_cap};
	err = pyd_walk_from(c->s, cur, &fb);
	g->frames = fb.v;
	g->nframes = fb.n;
	g->frames_cap = fb.cap;
	return err;
}

static enum pyd_err read_greenlet(struct gctx *c, struct pyd_greenlet *g,
				  uint64_t *stack)
{
	const struct glayout *gl = c->gl;
	uint8_t impl[PYD_GREENLET_IMPL_MAX];
	uint64_t pimpl;
	enum pyd_err err = pyd_read_ptr(c->s, g->id + (uint64_t)gl->pimpl, &pimpl);
	if (err || !pimpl ||
	    (err = pyd_read(c->s->src, pimpl, impl, gl->impl_size)))
		return err ? err : PYD_E_READ;
	if (word(impl, gl->self) != g->id)
		return PYD_E_READ;
	uint64_t stop = word(impl, gl->stack_stop);
	*stack = word(impl, gl->stack_start);
	g->main = stop == MAIN_STACK_STOP;
	if (!g->main)
		g->parent = word(impl, gl->parent);
	if (!g->main && !c->again)
		g->spawned = callable_name(c->s, word(impl, gl->run_callable));
	/* gevent keeps what a Greenlet was spawned with in its __dict__
	 * until it ends; greenlet drops run once it starts. */
	uint64_t dict, run;
	if (!g->main && !g->spawned && !c->again &&
	    !pyd_read_ptr(c->s, g->id + (uint64_t)gl->dict, &dict) && dict &&
	    !pyd_dict_get(c->s, dict, "_run", &run))
		g->spawned = callable_name(c->s, run);
	if (!stop)
		g->state = PYD_GREENLET_UNSTARTED;
	else if (!word(impl, gl->stack_start))
		g->state = PYD_GREENLET_DEAD;
	else
		g->state = PYD_GREENLET_SUSPENDED;
	return g->state == PYD_GREENLET_SUSPENDED
		       ? suspended_frames(c, impl, g)
		       : PYD_OK;
}

/* The current greenlet of every thread, from its main greenlet. */
static enum pyd_err note_running(struct gctx *c, const struct pyd_greenlet *g)
{
	uint64_t pimpl, ts, cur;
	if (!g->main || g->error ||
	    pyd_read_ptr(c->s, g->id + (uint64_t)c->gl->pimpl, &pimpl) ||
	    pyd_read_ptr(c->s, pimpl + (uint64_t)c->gl->thread_state, &ts) ||
	    !ts || pyd_read_ptr(c->s, ts + (uint64_t)c->gl->ts_current, &cur))
		return PYD_OK;
	if (!pyd_grow((void **)&c->running, &c->running_cap, c->nrunning + 1,
		      sizeof *c->running))
		return PYD_E_NOMEM;
	c->running[c->nrunning++] = cur;
	return PYD_OK;
}

static void mark_running(struct gctx *c, struct pyd_greenlet *g)
{
	for (size_t i = 0; i < c->nrunning; i++)
		if (c->running[i] == g->id && g->state != PYD_GREENLET_DEAD) {
			/* Its frames are its thread's (the saved ones are
			 * those of an earlier switch). */
			g->nframes = 0;
			g->error = PYD_OK;
			g->state = PYD_GREENLET_RUNNING;
		}
}

/* ---- which thread ---------------------------------------------------- */

/* The thread whose stack holds addr: the one with the first struct
 * pthread above it, else the main thread. */
static int64_t thread_of(const struct gctx *c, uint64_t addr)
{
	const struct gthread *best = NULL;
	for (size_t j = 0; j < c->nthreads; j++)
		if (c->threads[j].pthread > addr &&
		    (!best || c->threads[j].pthread < best->pthread))
			best = &c->threads[j];
	if (!best && c->nthreads)
		best = &c->threads[c->nthreads - 1];
	return best ? best->tid : 0;
}

static long index_of(const struct pyd_greenlet_set *set, uint64_t id)
{
	size_t lo = 0, hi = set->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (set->g[mid].id == id)
			return (long)mid;
		if (set->g[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The outermost greenlet of i's parent chain (a main greenlet, unless the
 * chain leaves the set or loops: then where it stopped). */
static size_t root_of(const struct pyd_greenlet_set *set, size_t i)
{
	for (size_t steps = 0; steps < set->n && set->g[i].parent; steps++) {
		long p = index_of(set, set->g[i].parent);
		if (p < 0)
			break;
		i = (size_t)p;
	}
	return i;
}

/* Each greenlet's thread: its chain's, told by a suspended greenlet of
 * it.  Needs the set sorted by id (sort_unique). */
static void assign_threads(struct gctx *c)
{
	struct pyd_greenlet_set *set = c->out;
	for (size_t i = 0; i < set->n; i++) {
		size_t r = root_of(set, i);
		if (set->g[i].state == PYD_GREENLET_SUSPENDED && c->stack[i] &&
		    !set->g[r].thread)
			set->g[r].thread = thread_of(c, c->stack[i]);
	}
	for (size_t i = 0; i < set->n; i++)
		set->g[i].thread = set->g[root_of(set, i)].thread;
}

/* Forget what a greenlet was read as, but its id, its thread (a greenlet
 * never moves to another thread), what it was spawned with and the room
 * its frames had. */
static void clear_greenlet(struct pyd_greenlet *g)
{
	pyd_frame_vars_free(g->vars, g->nframes);
	pyd_call_free(g->waiting);
	*g = (struct pyd_greenlet){.id = g->id,
				   .thread = g->thread,
				   .spawned = g->spawned,
				   .frames = g->frames,
				   .frames_cap = g->frames_cap};
}

static enum pyd_err read_all(struct gctx *c)
{
	struct pyd_greenlet_set *set = c->out;
	enum pyd_err err = PYD_OK;
	size_t good = 0;
	c->stack = calloc(set->n ? set->n : 1, sizeof *c->stack);
	if (!c->stack)
		return PYD_E_NOMEM;
	for (size_t i = 0; i < set->n && err != PYD_E_NOMEM; i++) {
		set->g[i].error = read_greenlet(c, &set->g[i], &c->stack[i]);
		good += set->g[i].error == PYD_OK;
		err = note_running(c, &set->g[i]);
	}
	for (size_t i = 0; i < set->n && !err; i++)
		mark_running(c, &set->g[i]);
	/* Not one greenlet that reads as its layout says: not that layout. */
	if (set->n && !good && !err)
		set->unknown_layout = true;
	return err;
}

/* Forget all a greenlet was read as but its id: what it was spawned with
 * is read again too (read_greenlet sets it on a first read). */
static void unread(struct pyd_greenlet *g)
{
	clear_greenlet(g);
	free(g->spawned);
	g->spawned = NULL;
}

/* A dry run of the read of greenlet i (the running ones it notes are
 * forgotten before the last read). */
static void greenlet_dry(void *ctx, size_t i)
{
	struct gctx *c = ctx;
	uint64_t stack;
	unread(&c->out->g[i]);
	read_greenlet(c, &c->out->g[i], &stack);
	note_running(c, &c->out->g[i]);
}

/* Every greenlet read, ahead in batches: a thousand of them, each a
 * chain of a dozen reads to its frames, are a dozen batched reads, not
 * tens of thousands of calls. */
static enum pyd_err read_all_ahead(struct gctx *c)
{
	struct pyd_read_ahead ra;
	pyd_read_ahead(c->s, &ra, greenlet_dry, c, c->out->n, READ_PASSES);
	for (size_t i = 0; i < c->out->n; i++)
		unread(&c->out->g[i]);
	c->nrunning = 0;
	enum pyd_err err = read_all(c);
	pyd_read_ahead_end(c->s, &ra);
	return err;
}

struct waiting_ctx {
	struct pyd_session *s;
	struct pyd_greenlet_set *set;
};

static enum pyd_err read_waiting(struct pyd_session *s,
				 struct pyd_greenlet *g)
{
	pyd_call_free(g->waiting);
	g->waiting = NULL;
	return g->state == PYD_GREENLET_SUSPENDED && g->nframes
		       ? pyd_pending_call(s, &g->frames[0], &g->waiting)
		       : PYD_OK;
}

static void waiting_dry(void *ctx, size_t i)
{
	struct waiting_ctx *x = ctx;
	read_waiting(x->s, &x->set->g[i]);
}

/* Read ahead too: what each waits in is a dozen reads (the call's
 * callable, its type and name, its arguments' reprs). */
enum pyd_err pyd_greenlets_waiting(struct pyd_session *s,
				   struct pyd_greenlet_set *set)
{
	struct pyd_read_ahead ra;
	struct waiting_ctx x = {s, set};
	enum pyd_err err = PYD_OK;
	pyd_read_ahead(s, &ra, waiting_dry, &x, set->n, READ_PASSES);
	for (size_t i = 0; i < set->n && !err; i++)
		err = read_waiting(s, &set->g[i]);
	pyd_read_ahead_end(s, &ra);
	return err;
}

enum pyd_err pyd_dump_greenlets(struct pyd_session *s,
				struct pyd_greenlet_set *out)
{
	memset(out, 0, sizeof *out);
	if (!s->layout.gc_lists.lists || !s->layout.objects.valid)
		return PYD_E_UNSUPPORTED;
	struct gctx c = {.s = s, .out = out};
	struct pyd_pagecache pc;
	bool cached = pyd_pagecache_init(&pc, s->src, GC_PAGES);
	const struct pyd_memsrc *src = cached ? &pc.layer.src : s->src;
	struct pyd_walk w;
	uint64_t interp;
	enum pyd_err err = PYD_OK;
	for (pyd_walk_interps(&w, s); !err && pyd_walk_next(&w, &interp);) {
		c.type = 0;
		c.nmemo = 0;
		find_module(&c, interp);
		if (c.type && c.gl && !(err = note_threads(&c, interp)))
			err = walk_interp(&c, src, interp);
	}
	pyd_walk_end(&w);
	if (cached)
		pyd_pagecache_free(&pc);
	if (!err)
		err = w.err;
	if (!err && c.gl) {
		sort_unique(out);
		out->layout = c.gl;
		err = read_all_ahead(&c);
	}
	if (!err && c.gl)
		assign_threads(&c);
	free(c.running);
	free(c.stack);
	free(c.threads);
	return err;
}

enum pyd_err pyd_greenlets_reread(struct pyd_session *s,
				  struct pyd_greenlet_set *set)
{
	struct gctx c = {.s = s, .gl = set->layout, .out = set, .again = true};
	if (!c.gl)
		return PYD_OK;
	for (size_t i = 0; i < set->n; i++)
		clear_greenlet(&set->g[i]);
	struct pyd_walk w;
	uint64_t interp;
	enum pyd_err err = PYD_OK;
	for (pyd_walk_interps(&w, s); !err && pyd_walk_next(&w, &interp);)
		err = note_threads(&c, interp);
	pyd_walk_end(&w);
	if (!err)
		err = w.err;
	if (!err)
		err = read_all(&c);
	free(c.running);
	free(c.stack);
	free(c.threads);
	return err;
}

void pyd_greenlet_set_free(struct pyd_greenlet_set *g)
{
	for (size_t i = 0; i < g->n; i++) {
		pyd_frame_vars_free(g->g[i].vars, g->g[i].nframes);
		pyd_call_free(g->g[i].waiting);
		free(g->g[i].frames);
		free(g->g[i].spawned);
	}
	free(g->g);
	memset(g, 0, sizeof *g);
}
