/*
 * The dump's threads: every interpreter's thread states, each one's
 * stack walked (stacks.c), its ids, names and run state.
 *
 * Walking a stack node by node costs a system call a frame: a hundred
 * threads a few frames deep are over a thousand.  Before its walks the
 * dump reads in a few batches what they will read -- the thread states'
 * fields, then each thread's data stack (3.11+), where its frames lie one
 * after another, from the newest chunk back -- so that the first walk of
 * each thread finds its nodes there.  A walk that caught its thread
 * mid-change is read again from the target itself (pyd_walk_stable).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "objects.h"
#include "session.h"
#include "thread_names.h"
#include "unicode.h"
#include "walk.h"

/* Bytes of a thread's data stack read ahead, newest first: 256 KiB, the
 * most one batched range holds, is thousands of frames. */
#define AHEAD_BYTES (256u << 10)
/* No data-stack chunk is smaller (CPython's DATA_STACK_CHUNK_SIZE): an
 * older chunk, whose header is not read yet, is read this far. */
#define CHUNK_MIN (16u << 10)
/* Chunks of a data stack read ahead (AHEAD_BYTES of the smallest), and
 * batches at most: one a chunk, then one a step of the walks off what
 * the last one read. */
#define AHEAD_CHUNKS 16
#define AHEAD_PASSES 24

/* The page cache the thread states are listed through: its pages, and
 * the block of them a miss past the first thread reads (8: 32 KiB, 15
 * states of 3.15's).  Two blocks: a list that goes down the heap needs
 * one at a time, and each page of the cache is a page fault the first
 * time it is written (256 pages cost a 100-thread dump 54 faults). */
#define LIST_PAGES 16
#define LIST_AROUND 8

/* What a thread has had read ahead: its chunks, newest first. */
struct ahead {
	uint64_t chunk[AHEAD_CHUNKS];
	size_t nchunks, bytes;
	bool done; /* no more chunks wanted */
};

struct ahead_ctx {
	struct pyd_session *s;
	struct pyd_read_ahead *ra;
	const uint64_t *ts;
	struct ahead *a;
	int32_t lo, hi; /* the thread-state fields read, as one range */
};

/* The thread-state fields a dump reads (list link, frame pointers, ids,
 * data stack), as one range [lo, hi) from the thread state. */
static void tstate_span(const struct py_layout *L, int32_t *lo, int32_t *hi)
{
	const int32_t f[] = {L->tstate.next, L->tstate.frame,
			     L->tstate.thread_id, L->tstate.native_thread_id,
			     L->tstate.base_frame, L->datastack.chunk,
			     L->datastack.top, L->exc.raised, L->exc.handled,
			     L->exc.info};
	*lo = f[0];
	*hi = f[0] + 8;
	for (size_t i = 1; i < sizeof f / sizeof *f; i++)
		if (f[i] != PYD_NO_FIELD) {
			*lo = f[i] < *lo ? f[i] : *lo;
			*hi = f[i] + 8 > *hi ? f[i] + 8 : *hi;
		}
}

static void want(struct pyd_prefetch *pf, struct ahead *a, uint64_t from,
		 uint64_t to)
{
	if (to - from > AHEAD_BYTES - a->bytes)
		from = to - (AHEAD_BYTES - a->bytes);
	pyd_prefetch_missed(pf, from, (size_t)(to - from));
	a->bytes += (size_t)(to - from);
}

/* Whether chunks of the data stack are still to come. */
static bool fetching(const struct ahead *a)
{
	return !a->done && a->nchunks < AHEAD_CHUNKS && a->bytes < AHEAD_BYTES;
}

/*
 * What the data stack of the thread state whose fields are span wants in
 * the next batch: its newest chunk up to its top, else the chunk before
 * the oldest wanted so far (its header's first word).
 */
static void want_chunks(struct ahead_ctx *x, const uint8_t *span,
			struct ahead *a)
{
	const struct py_layout *L = &x->s->layout;
	uint64_t prev = 0;
	if (a->done || a->nchunks == AHEAD_CHUNKS || a->bytes >= AHEAD_BYTES ||
	    (a->nchunks &&
	     pyd_read_ptr(x->s, a->chunk[a->nchunks - 1], &prev)))
		return;
	if (!a->nchunks) {
		uint64_t chunk = pyd_u64_at(span, L->datastack.chunk - x->lo);
		uint64_t top = pyd_u64_at(span, L->datastack.top - x->lo);
		a->done = !chunk || top <= chunk;
		prev = chunk;
		if (!a->done)
			want(&x->ra->pf, a, chunk, top);
	} else {
		a->done = !prev; /* the oldest chunk */
		if (!a->done)
			want(&x->ra->pf, a, prev, prev + CHUNK_MIN);
	}
	if (!a->done)
		a->chunk[a->nchunks++] = prev;
}

/* A dry run of the dump's reads of thread state i: its fields, the
 * chunks of its data stack, and its walk, following the links only (to a
 * run of the evaluation loop's entry frame on the C stack, a generator's
 * frame, the thread's base frame).  The walk waits for the chunks, whose
 * frames it reads: walked while they come, the frames of those come so
 * far would be walked again each pass (a 1,000-frame stack, 9 of them). */
static void thread_dry(void *ctx, size_t i)
{
	struct ahead_ctx *x = ctx;
	uint8_t span[512];
	size_t len = (size_t)(x->hi - x->lo);
	/* Fields too far apart for one read are left to the walk. */
	bool chunks = len <= sizeof span &&
		      !pyd_read(x->s->src, x->ts[i] + (uint64_t)x->lo, span,
				len) &&
		      x->s->layout.datastack.chunk != PYD_NO_FIELD;
	if (chunks)
		want_chunks(x, span, &x->a[i]);
	if (!chunks || !fetching(&x->a[i]))
		pyd_walk_links(x->s, x->ts[i]);
}

/* Put the session on a batch of what the walks of the thread states ts[]
 * will read; pyd_read_ahead_end after them. */
static void read_ahead(struct pyd_session *s, struct pyd_read_ahead *ra,
		       const uint64_t *ts, size_t n)
{
	struct ahead_ctx x = {.s = s, .ra = ra, .ts = ts,
			      .a = calloc(n ? n : 1, sizeof *x.a)};
	tstate_span(&s->layout, &x.lo, &x.hi);
	pyd_read_ahead(s, ra, thread_dry, &x, n, x.a ? AHEAD_PASSES : 0);
	free(x.a);
}

static uint64_t gil_holder(struct pyd_session *s, uint64_t interp)
{
	uint64_t addr;
	size_t len;
	uint8_t buf[64];
	if (!pyd_gil_probe(s, interp, &addr, &len) || len > sizeof buf ||
	    pyd_read(s->src, addr, buf, len))
		return 0;
	return pyd_gil_decode(s, buf);
}

static const struct pyd_os_thread *find_os_thread(const struct pyd_os_thread *t,
						  size_t n, int64_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return &t[i];
	return NULL;
}

struct dump_ctx {
	struct pyd_session *s;
	struct pyd_dump *d;
	const struct pyd_os_thread *os;
	size_t nos;
	size_t cap;
	size_t nframes; /* of every thread so far */
	const struct pyd_memsrc *fresh; /* beneath the batch read ahead */
	struct pyd_exc_seen exc_seen;
};

/* Room for one more thread in the dump (PYD_DUMP_MAX_THREADS, _FRAMES):
 * lists that look endless must not make it grow without bound. */
static bool room_for_thread(struct dump_ctx *c)
{
	if (c->d->nthreads < PYD_DUMP_MAX_THREADS &&
	    c->nframes < PYD_DUMP_MAX_FRAMES)
		return true;
	pyd_session_corrupt(c->s, "its thread lists hold more than %u threads "
			    "or %u frames in all",
			    PYD_DUMP_MAX_THREADS, PYD_DUMP_MAX_FRAMES);
	return false;
}

/* Is v an exception: not NULL, not None? */
static bool exception_value(struct pyd_session *s, struct pyd_exc_seen *seen,
                            uint64_t v)
{
	const struct py_layout *L = &s->layout;
	if (!v || v == seen->none)
		return false;
	if (v == seen->not_none)
		return true;
	uint64_t type = 0;
	char name[16];
	if (pyd_read_ptr(s, v + (uint64_t)L->object.ob_type, &type))
		return false;
	if (type && type == seen->not_none_type) {
		seen->not_none = v;
		return true;
	}
	pyd_type_name(s, type, name, sizeof name);
	if (!strcmp(name, "NoneType")) {
		seen->none = v;
		return false;
	}
	seen->not_none = v;
	seen->not_none_type = type;
	return true;
}

bool pyd_in_exception(struct pyd_session *s, struct pyd_exc_seen *seen,
                      uint64_t tstate, uint64_t raised, uint64_t handled,
                      uint64_t info)
{
	const struct py_layout *L = &s->layout;
	if (raised || exception_value(s, seen, handled))
		return true;
	uint64_t own = tstate + (uint64_t)(L->exc.handled - L->exc.item_value), v = 0;
	return L->exc.info != PYD_NO_FIELD && info && info != own &&
	       !pyd_read_ptr(s, info + (uint64_t)L->exc.item_value, &v) &&
	       exception_value(s, seen, v);
}

/* The three exception fields of tstate, read (0 where absent). */
static bool in_exception(struct dump_ctx *c, uint64_t tstate)
{
	const struct py_layout *L = &c->s->layout;
	const int32_t at[3] = {L->exc.raised, L->exc.handled, L->exc.info};
	uint64_t v[3] = {0, 0, 0};
	for (int i = 0; i < 3; i++)
		if (at[i] != PYD_NO_FIELD &&
		    pyd_read_ptr(c->s, tstate + (uint64_t)at[i], &v[i]))
			return false;
	return pyd_in_exception(c->s, &c->exc_seen, tstate, v[0], v[1], v[2]);
}

bool pyd_waits_for_gil(const struct pyd_memsrc *src, int64_t tid, uint64_t gil)
{
	uint64_t at = 0;
	return gil && tid && src->futex_wait &&
	       !src->futex_wait(src->ctx, tid, &at) && at >= gil &&
	       at - gil < PYD_GIL_SPAN;
}

static bool waits_for_gil(struct dump_ctx *c, int64_t tid, uint64_t gil)
{
	/* beneath the read-ahead's batch, which answers reads only */
	return pyd_waits_for_gil(c->fresh ? c->fresh : c->s->src, tid, gil);
}

static enum pyd_err add_thread(struct dump_ctx *c, uint64_t tstate,
			       int64_t interp_id, uint64_t holder, uint64_t gil)
{
	struct pyd_dump *d = c->d;
	if (!pyd_grow_from((void **)&d->threads, &c->cap, d->nthreads + 1,
	                   sizeof *d->threads, 16))
		return PYD_E_NOMEM;
	struct pyd_thread *t = &d->threads[d->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = pyd_thread_tid(c->s, tstate);
	t->tstate = tstate;
	t->interp_id = interp_id;
	t->holds_gil = holder && holder == tstate;
	const struct pyd_os_thread *os = find_os_thread(c->os, c->nos, t->tid);
	if (os) {
		snprintf(t->name, sizeof t->name, "%s", os->name);
		pyd_utf8_repair(t->name);
	}
	pyd_read_ptr(c->s, tstate + (uint64_t)c->s->layout.tstate.thread_id,
		     &t->ident);
	t->run = os ? os->run : PYD_RUN_UNKNOWN;
	t->waits_gil = !t->holds_gil && t->run == PYD_RUN_IDLE &&
		       waits_for_gil(c, t->tid, gil);
	t->in_exception = in_exception(c, tstate);
	struct pyd_frame_buf fb = {0};
	t->error = pyd_walk_stable(c->s, tstate, c->fresh, &fb, &d->retries);
	if (t->error == PYD_E_READ && pyd_recover_outer(c->s, tstate, &fb)) {
		t->error = PYD_OK;
		t->recovered = true;
	}
	t->frames = fb.v;
	t->nframes = fb.n;
	c->nframes += fb.n;
	t->truncated = fb.more;
	return t->error == PYD_E_EXITED || t->error == PYD_E_NOMEM ? t->error
								   : PYD_OK;
}

/* CPython pushes new interpreters and threads at the head of their lists:
 * show them oldest (the main interpreter, its main thread) first. */
static void reverse_threads(struct pyd_thread *t, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		struct pyd_thread tmp = t[i];
		t[i] = t[n - 1 - i];
		t[n - 1 - i] = tmp;
	}
}

/* The thread states of interpreter interp, in its list's order, into
 * *ts (malloc'd): the walk's error, or PYD_E_NOMEM.  Through a page cache
 * that reads LIST_AROUND pages a miss: the states of threads started one
 * after another lie one after another in the heap, and the list's reads,
 * one link at a time, were a read each. */
static enum pyd_err list_threads(struct pyd_session *s, uint64_t interp,
				 uint64_t **ts, size_t *n)
{
	struct pyd_walk w;
	struct pyd_paged p;
	size_t cap = 0;
	uint64_t t;
	*ts = NULL;
	*n = 0;
	pyd_session_paged(s, &p, LIST_PAGES);
	for (pyd_walk_threads(&w, s, interp); pyd_walk_next(&w, &t);) {
		if (!pyd_grow((void **)ts, &cap, *n + 1, sizeof **ts)) {
			pyd_walk_end(&w);
			pyd_session_unpaged(s, &p);
			return PYD_E_NOMEM;
		}
		(*ts)[(*n)++] = t;
		/* A process of one thread reads its page, no more. */
		p.pc.around = LIST_AROUND;
	}
	pyd_session_unpaged(s, &p);
	return w.err;
}

static bool any_running(const struct dump_ctx *c)
{
	for (size_t i = 0; i < c->nos; i++)
		if (c->os[i].run == PYD_RUN_RUNNING)
			return true;
	return false;
}

static enum pyd_err dump_interp(struct dump_ctx *c, uint64_t interp)
{
	size_t first = c->d->nthreads, n;
	struct pyd_session *s = c->s;
	const struct py_layout *L = &s->layout;
	int64_t id = 0;
	if (L->interp.id != PYD_NO_FIELD)
		pyd_read_ptr(s, interp + (uint64_t)L->interp.id, (uint64_t *)&id);
	/* Where none holds the GIL and none runs, none waits for it: the
	 * kernel is asked about each sleeping thread only while one holds it
	 * or runs (one that dropped it to let a waiter in runs), so a dump of
	 * sleeping threads makes no system call more. */
	uint64_t holder = gil_holder(s, interp);
	uint64_t gil = holder || any_running(c) ? pyd_gil_struct(s, interp) : 0;
	uint64_t *ts;
	enum pyd_err listed = list_threads(s, interp, &ts, &n), err = PYD_OK;
	if (listed == PYD_E_NOMEM)
		return listed;
	struct pyd_read_ahead ra;
	read_ahead(s, &ra, ts, n);
	c->fresh = ra.own;
	bool full = false;
	for (size_t i = 0; i < n && !err && !full; i++)
		if (!(full = !room_for_thread(c)))
			err = add_thread(c, ts[i], id, holder, gil);
	pyd_read_ahead_end(s, &ra);
	free(ts);
	if (err || full)
		return err;
	/* An interpreter without threads adds none (and threads may be
	 * NULL yet: no offset from it). */
	if (!listed && c->d->nthreads > first)
		pyd_thread_names(s, interp, c->d->threads + first,
				 c->d->nthreads - first);
	return listed;
}

enum pyd_err pyd_dump_stacks(struct pyd_session *s, struct pyd_dump *d)
{
	memset(d, 0, sizeof *d);
	struct dump_ctx c = {.s = s, .d = d};
	if (s->src->threads)
		s->src->threads(s->src->ctx, &c.os, &c.nos);
	struct pyd_walk w;
	uint64_t interp;
	enum pyd_err err = PYD_OK;
	for (pyd_walk_interps(&w, s); pyd_walk_next(&w, &interp);) {
		d->ninterps++;
		if ((err = dump_interp(&c, interp))) {
			pyd_walk_end(&w);
			break;
		}
	}
	if (!err)
		err = w.err;
	if (!err && d->ninterps == 0)
		err = PYD_E_NOTPYTHON;
	reverse_threads(d->threads, d->nthreads);
	return err;
}

void pyd_dump_free(struct pyd_dump *d)
{
	for (size_t i = 0; i < d->nthreads; i++) {
		struct pyd_thread *t = &d->threads[i];
		pyd_frame_vars_free(t->vars, t->nframes);
		free(t->frames);
		for (size_t j = 0; j < t->nnative; j++) {
			free((char *)t->native[j].function);
			free((char *)t->native[j].library);
			free((char *)t->native[j].file);
		}
		free(t->native);
	}
	free(d->threads);
	memset(d, 0, sizeof *d);
}
