/*
 * The sampler.
 *
 * Reads are the cost of sampling a live process, so a round reads, in
 * one batch, every node that the previous round walked: each thread's
 * state, its _PyCFrame (3.11-3.12) and its frames.  Nodes close together
 * (3.11+ frames share a data-stack chunk; frame objects share pymalloc
 * pools) are merged into one range, so a steady stack of any depth costs
 * a single process_vm_readv.  The walk then takes each node from the
 * batch when its address is the predicted one and reads it on its own
 * where the stack changed; what it walked is the next prediction.
 *
 * Decoding is the rest of a round's cost, and between two rounds most of
 * a stack stays put: only the innermost frame's instruction pointer
 * moves.  The batch buffer alternates between two copies, so a round
 * sees the bytes each node had the round before; the outermost nodes
 * that read the same bytes (found by one comparison of the bytes they
 * span, as a rule) are not decoded again but keep their frames from the
 * thread's last walk (its memo), which stays where that walk wrote it,
 * and the profile is told that those outer frames are the previous
 * sample's: a round of a deep, busy stack decodes one frame and copies
 * none.
 *
 * Whether the thread list changed is read in the same batch once a
 * millisecond: each interpreter's list head and each thread state's next
 * pointer.  So are the headers of the code objects the stacks used since
 * the last time: CPython frees code objects and another can take the
 * address (a program starting up imports and drops hundreds), and a
 * stale entry would name every sample of the new one after the old for
 * as long as it stayed.  Async mode reads them on their own, as often.
 *
 * The fields a mode decides on come first in the batch: the GIL (gil
 * mode), each thread's exceptions (exception mode).  Each interpreter's
 * gc.collecting (<GC> frames) is read with the list heads: one more
 * range every round costs some 16% of a round's time at -r max, so at
 * that rate a round up to a millisecond after a collection started or
 * ended is marked as the round before it; at 1 kHz every round reads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../pyd_profile.h"
#include "../grow.h"
#include "../memsrc/pagecache.h"
#include "../memsrc/prefetch.h"
#include "code.h"
#include "objects.h"
#include "session.h"
#include "thread_names.h"
#include "unicode.h"
#include "walk.h"

/* Nodes closer than this are read as one range: less than a page, so
 * no page lies wholly between two readable nodes, and the bytes between
 * them are mapped too.  Copying them costs less than another range. */
#define MERGE_GAP 4095
#define NODE_MAX  256
/* A node compared on its own costs about what comparing this many bytes
 * of a run does: a span with more per node is compared node by node. */
#define SPAN_NODE_BYTES 256
/*
 * 3.12+ stacks end in shim frames: one on the thread's C stack (owned by
 * the C stack), and on 3.14+ the thread's base frame.  They cost a range
 * of their own, so they are read only with the list heads, once a
 * millisecond, and served from a copy in between: they live as long as
 * the outermost Python call, and should they change, the copy is stale
 * for at most that long.
 */
/* A round that misses more nodes than COLD_DIRECT (a stack first seen, or
 * one that changed far down) reads the rest through a page cache, a miss
 * COLD_AROUND pages at once: 3.11+ frames lie side by side in the data
 * stack, so a million-frame stack costs some 1,600 reads of 64 KiB, not
 * a million of one frame (and, before 3.11, frame objects made one after
 * another lie close too).  A few misses stay exact reads: a block costs
 * more than a node when a round needs only a few. */
#define COLD_DIRECT 64
#define COLD_PAGES  64
#define COLD_AROUND 16
#define TAIL_MAX   4
#define TAIL_BYTES 128
/* A greenlet's boundary frame: "<greenlet NAME>". */
#define GLABEL_MAX 96
/* Refresh thread names this often. */
#define REFRESH_NS 1000000000LL
/* Check whether threads came or went, and whether code objects were
 * replaced, this often: a thread state freed since can still be walked,
 * and a replaced code object is named after the old one, for up to this
 * long. */
#define HEADS_NS 1000000LL
/* Ask the source whether threads never seen on a CPU are on one this
 * often (one /proc read each): often enough to tell idle threads, which
 * the table leaves out, from any that run a fair share of the time. */
#define RUN_NS 10000000LL

struct pred {
	uint64_t addr;
	uint32_t len;
	uint32_t off;   /* in the batch buffer */
	uint32_t range; /* the batch range holding it; UINT32_MAX: none */
	bool saved;     /* a bottom shim: served from sthread.tail[slot] */
	uint8_t slot;
};

struct sthread {
	uint64_t tstate;
	uint64_t next;       /* tstate->next when the list was read */
	uint8_t next_buf[8]; /* and as the batch read it */
	int64_t tid;
	char name[64];
	size_t interp; /* index into the sampler's interpreters */
	struct pred *pred;
	size_t npred, cap;
	bool in_batch;
	bool ran; /* seen on a CPU: no need to ask again */
	/* cpu and greenlet modes: whether the OS had it on a CPU this round */
	enum pyd_thread_run run;
	uint8_t tail[TAIL_MAX][TAIL_BYTES]; /* the saved bottom shims */
	/* exception mode: exc.raised, exc.handled, exc.info as read */
	uint8_t exc[3][8];
	/* Its stack, which its walks write in place: the first nmemo frames
	 * are its last walk's (its memo; the <GC> and cut marks come after
	 * them or void it), memo_at[i] of them before node i, and memo_round
	 * the round of that walk.  A round whose nodes from same_from on read
	 * the bytes they read then keeps the frames of those nodes, moved at
	 * most, instead of decoding them again. */
	struct pyd_frame_buf fb;
	size_t nmemo;
	size_t *memo_at;
	size_t nmemo_at, memo_at_cap;
	bool memo_more;
	uint64_t memo_round;
	size_t same_from;
	size_t same_out; /* this round: its outermost frames taken from it */
	/* The batch's bytes from the first to the last byte of its nodes
	 * from span_from on, under plan span_gen, their last range
	 * span_range: one comparison tells the common round's same_from,
	 * unless they lie far apart or the bytes between them change
	 * (span_wide: compared node by node). */
	size_t span_from;
	uint32_t span_lo, span_hi, span_range;
	uint64_t span_gen;
	bool span_wide;
};

struct sinterp {
	uint64_t addr;
	uint64_t head; /* its first thread state when the list was read */
	uint64_t gil_addr;
	size_t gil_len;
	uint64_t gil_struct; /* where its waiters block (pyd_gil_struct) */
	uint8_t head_buf[8], gil_buf[64];
	uint64_t gc_addr;   /* its gc.collecting; 0: not known or not asked */
	uint8_t gc_buf[4];
	uint64_t collector; /* the thread state running the collector, or 0 */
};

struct pyd_sampler {
	struct pyd_session *s;
	struct pyd_profile *prof;
	uint32_t process; /* the profile's index of our process */
	enum pyd_sample_mode mode;
	struct sthread *th;
	size_t nth, th_cap;
	struct sinterp *in;
	size_t nin, in_cap;
	bool stale;        /* thread list must be read again */
	int64_t refreshed; /* CLOCK_MONOTONIC ns of the last refresh */
	int64_t now;       /* ... and of this round's start */
	struct pyd_iov *iov;
	size_t niov, iov_cap;
	struct pred **sorted; /* the batch's nodes by address */
	size_t nsorted, sorted_cap;
	size_t nfields;     /* iov[0..nfields): GIL, GC, exception fields */
	size_t nranges;     /* iov[nfields..nranges): nodes; then list heads */
	size_t nplan;       /* ... to nplan; then code objects' headers */
	int64_t heads_read; /* CLOCK_MONOTONIC ns the heads were last read */
	int64_t run_asked;  /* ... and the threads' run states asked */
	int64_t gil_asked;  /* ... and who waits for the GIL (gil mode) */
	bool plan_valid;    /* iov and sorted still fit the predictions */
	uint64_t plan_gen;  /* plans made so far */
	uint8_t *buf;
	size_t buf_cap;
	/* The batch's ranges as the previous round read them, under plan
	 * prev_gen in round prev_round: the two buffers swap every round. */
	uint8_t *prev;
	size_t prev_cap;
	uint64_t prev_gen, prev_round;
	uint64_t round; /* rounds taken (thread modes) */
	bool reuse;     /* this round may take frames from the threads' memos */
	size_t nread;   /* iov[0..nread) read whole this round */
	size_t node_len; /* a frame node's bytes (pyd_frame_node_len) */
	/* The walk's copies: its trailing shims (see TAIL_MAX), a node read
	 * on its own; here, not in each walk's reader, which is set up anew
	 * every round. */
	uint8_t tail[TAIL_MAX][TAIL_BYTES];
	uint8_t scratch[NODE_MAX];
	/* The round's misses (COLD_DIRECT), and its page cache: cleared
	 * every round that uses it, as a round's bytes are its own. */
	uint64_t cold_round;
	size_t cold_misses;
	struct pyd_pagecache cold;
	int cold_state; /* 0 not made, 1 made, -1 out of memory */
	struct pyd_frame_buf fb; /* the stacks of tasks and greenlets */
	char cut[48]; /* the function of the frame ending a cut stack */
	char gc[8];   /* "<GC>": a frame's function outlives the round */
	uint64_t last_holder; /* gil mode: the predicted holder */
	/* exception mode: None, once met, and the last value that was not */
	struct pyd_exc_seen exc_seen;
	/* async mode: the last round's reads, read again in one batch, and
	 * the round's task names as the profile keeps them */
	struct pyd_prefetch pf;
	const char **names;
	size_t names_cap;
	/* ... and the order they are added in: each task's waiter first */
	long *order, *waiter; /* waiter: within order's block */
	size_t order_cap;
	/* The code objects being checked, and their headers as read */
	struct pyd_code **codes;
	size_t ncodes, codes_cap;
	uint8_t *code_hdrs;
	size_t code_hdrs_cap;
	/* greenlet mode: the greenlets known (looked for again once a
	 * second, read again every round) and their boundary labels */
	struct pyd_greenlet_set gs;
	int64_t greenlets_found; /* CLOCK_MONOTONIC ns of the last search */
	char (*glabels)[GLABEL_MAX];
	size_t glabels_cap;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the thread list ---- */

static void free_thread(struct sthread *t)
{
	free(t->pred);
	free(t->fb.v);
	free(t->memo_at);
}

static void free_threads(struct pyd_sampler *sp)
{
	for (size_t i = 0; i < sp->nth; i++)
		free_thread(&sp->th[i]);
	free(sp->th);
	sp->th = NULL;
	sp->nth = 0;
}

/* Carry the names and predictions of threads that are still there. */
static void keep_thread(struct sthread *t, struct sthread *old, size_t nold)
{
	for (size_t i = 0; i < nold; i++) {
		if (old[i].tstate != t->tstate || old[i].tid != t->tid)
			continue;
		memcpy(t->name, old[i].name, sizeof t->name);
		t->ran = old[i].ran;
		t->pred = old[i].pred;
		t->npred = old[i].npred;
		t->cap = old[i].cap;
		old[i].pred = NULL;
		old[i].npred = old[i].cap = 0;
		t->fb = old[i].fb;
		t->memo_at = old[i].memo_at;
		t->memo_at_cap = old[i].memo_at_cap;
		old[i].fb = (struct pyd_frame_buf){0};
		old[i].memo_at = NULL;
		return;
	}
}

/* Thread names: the OS's, then threading's where the target tells. */
static void name_threads(struct pyd_sampler *sp, size_t first, uint64_t interp)
{
	const struct pyd_os_thread *os = NULL;
	size_t nos = 0;
	const struct pyd_memsrc *src = sp->s->src;
	if (src->threads)
		src->threads(src->ctx, &os, &nos);
	size_t n = sp->nth - first;
	struct pyd_thread *t = calloc(n ? n : 1, sizeof *t);
	if (!t)
		return;
	for (size_t i = 0; i < n; i++) {
		struct sthread *st = &sp->th[first + i];
		t[i].tid = st->tid;
		for (size_t j = 0; j < nos; j++)
			if (os[j].tid == st->tid)
				snprintf(t[i].name, sizeof t[i].name, "%s",
				         os[j].name);
		pyd_read_ptr(sp->s,
		             st->tstate +
		                 (uint64_t)sp->s->layout.tstate.thread_id,
		             &t[i].ident);
	}
	pyd_thread_names(sp->s, interp, t, n);
	for (size_t i = 0; i < n; i++) {
		memcpy(sp->th[first + i].name, t[i].name, sizeof t[i].name);
		pyd_utf8_repair(sp->th[first + i].name);
	}
	free(t);
}

/* Where interpreter interp's gc.collecting is; 0 where unknown. */
static uint64_t gc_field(const struct pyd_session *s, uint64_t interp)
{
	const struct py_layout *L = &s->layout;
	if (L->interp.gc_collecting != PYD_NO_FIELD)
		return interp + (uint64_t)L->interp.gc_collecting;
	if (L->runtime.gc_collecting != PYD_NO_FIELD && s->rt.runtime_addr)
		return s->rt.runtime_addr + (uint64_t)L->runtime.gc_collecting;
	return 0;
}

static enum pyd_err add_interp(struct pyd_sampler *sp, uint64_t interp,
                               struct sthread *old, size_t nold, bool names)
{
	struct sinterp *in = &sp->in[sp->nin];
	memset(in, 0, sizeof *in);
	in->addr = interp;
	if (!pyd_gil_probe(sp->s, interp, &in->gil_addr, &in->gil_len) ||
	    in->gil_len > sizeof in->gil_buf)
		in->gil_addr = 0;
	in->gil_struct = sp->mode == PYD_SAMPLE_GIL ? pyd_gil_struct(sp->s, interp) : 0;
	in->gc_addr = sp->prof->gc ? gc_field(sp->s, interp) : 0;
	size_t first = sp->nth;
	struct pyd_walk w;
	uint64_t ts;
	for (pyd_walk_threads(&w, sp->s, interp); pyd_walk_next(&w, &ts);) {
		if (!pyd_grow_from((void **)&sp->th, &sp->th_cap, sp->nth + 1,
		                   sizeof *sp->th, 8)) {
			pyd_walk_end(&w);
			return PYD_E_NOMEM;
		}
		struct sthread *t = &sp->th[sp->nth++];
		memset(t, 0, sizeof *t);
		t->tstate = ts;
		t->next = w.link;
		t->interp = sp->nin;
		t->tid = pyd_thread_tid(sp->s, ts);
		keep_thread(t, old, nold);
	}
	in->head = w.head;
	sp->nin++;
	if (!w.err && names)
		name_threads(sp, first, interp);
	return w.err;
}

/* Read the interpreters and threads again; thread names (which cost
 * many reads) only when asked. */
static enum pyd_err refresh(struct pyd_sampler *sp, bool names)
{
	struct sthread *old = sp->th;
	size_t nold = sp->nth;
	sp->th = NULL;
	sp->nth = sp->th_cap = 0;
	sp->nin = 0;
	struct pyd_walk w;
	uint64_t interp;
	enum pyd_err err = PYD_OK;
	for (pyd_walk_interps(&w, sp->s); pyd_walk_next(&w, &interp);) {
		if (!pyd_grow_from((void **)&sp->in, &sp->in_cap, sp->nin + 1,
		                   sizeof *sp->in, 4))
			err = PYD_E_NOMEM;
		if (err || (err = add_interp(sp, interp, old, nold, names))) {
			pyd_walk_end(&w);
			break;
		}
	}
	if (!err)
		err = w.err;
	for (size_t i = 0; i < nold; i++)
		free_thread(&old[i]);
	free(old);
	if (!err && !sp->nin)
		err = PYD_E_NOTPYTHON;
	sp->stale = err != PYD_OK;
	sp->plan_valid = false;
	if (names)
		sp->refreshed = sp->now;
	return err;
}

/* ---- the batch ---- */

static int cmp_pred(const void *a, const void *b)
{
	const struct pred *x = *(struct pred *const *)a,
	                  *y = *(struct pred *const *)b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static bool push_iov(struct pyd_sampler *sp, uint64_t addr, void *buf,
                     size_t len)
{
	if (!pyd_grow((void **)&sp->iov, &sp->iov_cap, sp->niov + 1,
	              sizeof *sp->iov))
		return false;
	sp->iov[sp->niov++] = (struct pyd_iov){addr, buf, len};
	return true;
}

/* The predicted nodes of the threads in the batch, by address. */
static size_t sort_preds(struct pyd_sampler *sp)
{
	size_t n = 0;
	for (size_t i = 0; i < sp->nth; i++)
		if (sp->th[i].in_batch)
			n += sp->th[i].npred;
	if (!pyd_grow((void **)&sp->sorted, &sp->sorted_cap, n,
	              sizeof *sp->sorted))
		return SIZE_MAX;
	n = 0;
	for (size_t i = 0; i < sp->nth; i++)
		for (size_t j = 0; sp->th[i].in_batch && j < sp->th[i].npred;
		     j++)
			if (!sp->th[i].pred[j].saved)
				sp->sorted[n++] = &sp->th[i].pred[j];
	if (n)
		qsort(sp->sorted, n, sizeof *sp->sorted, cmp_pred);
	return n;
}

/* Merge sorted nodes closer than MERGE_GAP into ranges of the batch;
 * with buf NULL only count the bytes. */
static size_t plan_ranges(struct pyd_sampler *sp, size_t n, uint8_t *buf,
                          bool *ok)
{
	size_t base = 0;
	uint64_t start = 0, end = 0;
	for (size_t i = 0; i < n; i++) {
		struct pred *p = sp->sorted[i];
		if (i == 0 || p->addr > end + MERGE_GAP) {
			if (i && buf)
				*ok &= push_iov(sp, start, buf + base,
				                end - start);
			base += end - start;
			start = end = p->addr;
		}
		if (p->addr + p->len > end)
			end = p->addr + p->len;
		p->off = (uint32_t)(base + (p->addr - start));
		p->range = (uint32_t)sp->niov;
	}
	if (n && buf)
		*ok &= push_iov(sp, start, buf + base, end - start);
	return base + (end - start);
}

/* The fields the round decides on: the GIL (gil mode), each sampled
 * thread's exceptions (exception mode). */
static bool plan_fields(struct pyd_sampler *sp)
{
	const struct py_layout *L = &sp->s->layout;
	bool ok = true;
	for (size_t i = 0; sp->mode == PYD_SAMPLE_GIL && i < sp->nin; i++)
		if (sp->in[i].gil_addr)
			ok &= push_iov(sp, sp->in[i].gil_addr,
			               sp->in[i].gil_buf, sp->in[i].gil_len);
	const int32_t exc[3] = {L->exc.raised, L->exc.handled, L->exc.info};
	for (size_t i = 0; sp->mode == PYD_SAMPLE_EXCEPTION && i < sp->nth;
	     i++)
		for (size_t j = 0; j < 3; j++) {
			memset(sp->th[i].exc[j], 0, 8);
			if (exc[j] != PYD_NO_FIELD)
				ok &= push_iov(sp,
				               sp->th[i].tstate + (uint64_t)exc[j],
				               sp->th[i].exc[j], 8);
		}
	return ok;
}

/*
 * Lay out the batch: the fields the round decides on, the ranges, then
 * gc.collecting and the list heads, which only some rounds read (a
 * failed range stops a readv, and must not cost the fields).
 */
static enum pyd_err plan_batch(struct pyd_sampler *sp)
{
	size_t n = sort_preds(sp);
	bool ok = n != SIZE_MAX;
	size_t bytes = ok ? plan_ranges(sp, n, NULL, &ok) : 0;
	if (!ok || !pyd_grow((void **)&sp->buf, &sp->buf_cap, bytes, 1) ||
	    !pyd_grow((void **)&sp->prev, &sp->prev_cap, bytes, 1))
		return PYD_E_NOMEM;
	sp->plan_gen++;
	const struct py_layout *L = &sp->s->layout;
	sp->niov = 0;
	ok &= plan_fields(sp);
	sp->nfields = sp->niov;
	sp->nsorted = n;
	plan_ranges(sp, n, sp->buf, &ok);
	sp->nranges = sp->niov;
	for (size_t i = 0; i < sp->nin; i++)
		if (sp->in[i].gc_addr)
			ok &= push_iov(sp, sp->in[i].gc_addr, sp->in[i].gc_buf,
			               4);
	for (size_t i = 0; i < sp->nin; i++)
		ok &= push_iov(sp,
		               sp->in[i].addr + (uint64_t)L->interp.tstate_head,
		               sp->in[i].head_buf, 8);
	for (size_t i = 0; i < sp->nth; i++) {
		struct sthread *t = &sp->th[i];
		ok &= push_iov(sp, t->tstate + (uint64_t)L->tstate.next,
		               t->next_buf, 8);
		for (size_t j = 0; t->in_batch && j < t->npred; j++)
			if (t->pred[j].saved)
				ok &= push_iov(sp, t->pred[j].addr,
				               t->tail[t->pred[j].slot],
				               t->pred[j].len);
	}
	if (!ok)
		return PYD_E_NOMEM;
	sp->nplan = sp->niov;
	sp->plan_valid = true;
	return PYD_OK;
}

/* Take the code objects used since the last check, and lay out the reads
 * that check them in iov from sp->niov on. */
static bool plan_code_check(struct pyd_sampler *sp)
{
	size_t len = pyd_code_check_size(&sp->s->layout);
	sp->ncodes = pyd_code_take_used(sp->s, &sp->codes, &sp->codes_cap);
	if (!pyd_grow((void **)&sp->code_hdrs, &sp->code_hdrs_cap,
	              sp->ncodes * len, 1)) {
		sp->ncodes = 0;
		return false;
	}
	bool ok = true;
	for (size_t i = 0; i < sp->ncodes; i++) {
		struct pyd_code_read r[PYD_CODE_CHECK_READS];
		pyd_code_check_reads(sp->s, sp->codes[i], r);
		for (size_t j = 0; j < PYD_CODE_CHECK_READS; j++)
			ok &= push_iov(sp, r[j].addr,
			               sp->code_hdrs + i * len + r[j].off,
			               r[j].len);
	}
	return ok;
}

/* Drop those of the checked code objects whose bytes, of which the first
 * nread reads were made, changed. */
static void finish_code_check(struct pyd_sampler *sp, size_t nread)
{
	size_t n = nread / PYD_CODE_CHECK_READS;
	if (pyd_code_recheck(sp->s, sp->codes, n < sp->ncodes ? n : sp->ncodes,
	                     sp->code_hdrs))
		pyd_profile_forget_strings(sp->prof);
	sp->ncodes = 0;
}

/* Did a thread start or end since the list was read? */
static bool heads_changed(const struct pyd_sampler *sp)
{
	for (size_t i = 0; i < sp->nin; i++)
		if (pyd_u64_at(sp->in[i].head_buf, 0) != sp->in[i].head)
			return true;
	for (size_t i = 0; i < sp->nth; i++)
		if (pyd_u64_at(sp->th[i].next_buf, 0) != sp->th[i].next)
			return true;
	return false;
}

/* The batch's ranges go to the other buffer: this round's bytes beside
 * the previous round's. */
static void swap_buffers(struct pyd_sampler *sp)
{
	uint8_t *old = sp->buf;
	pyd_grown_swap(&sp->buf, &sp->buf_cap, &sp->prev, &sp->prev_cap);
	for (size_t i = sp->nfields; i < sp->nranges; i++)
		sp->iov[i].buf = sp->buf + ((uint8_t *)sp->iov[i].buf - old);
}

/*
 * One read of the fields the round decides on, every predicted node of
 * the threads marked in_batch and, once a millisecond, gc.collecting,
 * the thread-list heads and the headers of the code objects used.
 * The plan is kept while the predictions hold: a steady stack only reads.
 */
static enum pyd_err read_batch(struct pyd_sampler *sp)
{
	enum pyd_err err = PYD_OK;
	if (!sp->plan_valid && (err = plan_batch(sp)))
		return err;
	bool heads = sp->now - sp->heads_read >= HEADS_NS;
	swap_buffers(sp);
	/* Frames may come from memos unless the plan changed, or this round
	 * reads what a memo does not cover: the saved shims, code objects. */
	sp->reuse = !heads && sp->prev_gen == sp->plan_gen &&
	            sp->prev_round + 1 == sp->round;
	sp->niov = sp->nplan;
	if (heads && !plan_code_check(sp))
		return PYD_E_NOMEM;
	size_t done = 0;
	err = pyd_readv(sp->s->src, sp->iov, heads ? sp->niov : sp->nranges,
	                &done);
	if (heads)
		finish_code_check(sp, done > sp->nplan ? done - sp->nplan : 0);
	if (err)
		return err;
	if (done < sp->nfields)
		return PYD_E_READ;
	sp->nread = done;
	if (heads && done >= sp->nplan) {
		sp->heads_read = sp->now;
		if (heads_changed(sp)) {
			sp->stale = true;
			return PYD_E_TORN;
		}
	}
	return PYD_OK;
}

/* ---- walking ---- */

struct batch_reader {
	struct pyd_sampler *sp;
	struct sthread *t;
	bool use_batch;
	size_t walked;
	/* The trailing run of shim frames served so far: their indexes (and
	 * their bytes in sp->tail). */
	size_t ntail, tail_index[TAIL_MAX];
	bool spliced;   /* the outer frames came from the memo */
	bool memo_lost; /* out of memory for memo_at: keep no memo */
};

/* Track the trailing shims (see TAIL_MAX): only frame nodes have an
 * owner; the nodes read before the frames leave no tail yet, those read
 * after them (where the thread's stack starts) leave it as it is. */
static void track_tail(struct batch_reader *r, size_t index, const uint8_t *d,
                       size_t len)
{
	struct pyd_sampler *sp = r->sp;
	const struct py_layout *L = &sp->s->layout;
	if (len != sp->node_len)
		return;
	if (L->owner_first_shim == PYD_NO_FIELD || len > TAIL_BYTES ||
	    d[L->iframe.owner] < L->owner_first_shim) {
		r->ntail = 0;
		return;
	}
	if (r->ntail == TAIL_MAX)
		return;
	memcpy(sp->tail[r->ntail], d, len);
	r->tail_index[r->ntail++] = index;
}

static void predict(struct pyd_sampler *sp, struct sthread *t, size_t index,
                    uint64_t addr, size_t len)
{
	sp->plan_valid = false;
	if (index >= t->cap) {
		size_t cap = t->cap;
		if (!pyd_grow((void **)&t->pred, &cap, index + 1,
		              sizeof *t->pred))
			return; /* no prediction: the next round reads more */
		t->cap = cap;
	}
	if (index >= t->npred)
		t->npred = index + 1;
	t->pred[index] = (struct pred){
	    .addr = addr, .len = (uint32_t)len, .range = UINT32_MAX};
}

/* Read a node the batch did not hold (see COLD_DIRECT). */
static enum pyd_err cold_read(struct pyd_sampler *sp, uint64_t addr,
                              void *buf, size_t len)
{
	if (sp->cold_round != sp->round) {
		sp->cold_round = sp->round;
		sp->cold_misses = 0;
		if (sp->cold_state > 0)
			pyd_pagecache_clear(&sp->cold);
	}
	if (sp->cold_misses++ < COLD_DIRECT)
		return pyd_read(sp->s->src, addr, buf, len);
	if (!sp->cold_state) {
		sp->cold_state = pyd_pagecache_init(&sp->cold, sp->s->src,
		                                    COLD_PAGES) ? 1 : -1;
		sp->cold.around = COLD_AROUND;
	}
	/* Through the cache only while it lies over the session's source
	 * (a pass may have laid another over it for a while). */
	bool cached = sp->cold_state > 0 && sp->cold.layer.inner == sp->s->src;
	return pyd_read(cached ? &sp->cold.layer.src : sp->s->src, addr, buf,
	                len);
}

static const uint8_t *batch_get(void *ctx, size_t index, uint64_t addr,
                                size_t len, enum pyd_err *err)
{
	struct batch_reader *r = ctx;
	struct sthread *t = r->t;
	const uint8_t *d = NULL;
	const struct pred *p = index < t->npred ? &t->pred[index] : NULL;
	r->walked = index + 1;
	if (r->use_batch && p && p->addr == addr && p->len == len && p->saved) {
		d = t->tail[p->slot];
	} else if (r->use_batch && p && p->addr == addr && p->len == len &&
	           p->range < r->sp->nread) {
		d = r->sp->buf + p->off;
	} else if (len > NODE_MAX) {
		*err = PYD_E_READ;
	} else if (!(*err = cold_read(r->sp, addr, r->sp->scratch, len))) {
		predict(r->sp, t, index, addr, len);
		d = r->sp->scratch;
	}
	if (d)
		track_tail(r, index, d, len);
	return d;
}

/* Remember where in the batch t's nodes from `from` on lie (see
 * sthread.span_from), under this plan. */
static void set_span(struct pyd_sampler *sp, struct sthread *t, size_t from)
{
	uint32_t lo = UINT32_MAX, hi = 0, range = 0;
	size_t n = 0;
	for (size_t i = from; i < t->npred; i++) {
		const struct pred *p = &t->pred[i];
		if (p->saved)
			continue;
		n++;
		if (p->off < lo)
			lo = p->off;
		if (p->off + p->len > hi)
			hi = p->off + p->len;
		if (p->range > range)
			range = p->range;
	}
	t->span_from = from;
	t->span_lo = lo < hi ? lo : 0;
	t->span_hi = lo < hi ? hi : 0;
	t->span_range = range;
	t->span_gen = sp->plan_gen;
	t->span_wide = t->span_hi - t->span_lo > n * SPAN_NODE_BYTES;
}

/* After a round whose span did not hold: the span of the nodes found
 * the same, unless it was that span already, whose nodes held but not
 * the bytes between them: then none under this plan. */
static void respan(struct pyd_sampler *sp, struct sthread *t, size_t from)
{
	if (t->span_gen != sp->plan_gen || t->span_from != from)
		set_span(sp, t, from);
	else
		t->span_wide = true;
}

/* Do t's nodes from span_from on hold, in this round's batch, the bytes
 * they held in the last round's?  The bytes between them are compared
 * too: a difference there only sends find_same node by node. */
static bool span_same(const struct pyd_sampler *sp, const struct sthread *t)
{
	return !t->span_wide && t->span_gen == sp->plan_gen &&
	       t->span_from <= t->npred &&
	       t->span_range < sp->nread &&
	       !memcmp(sp->buf + t->span_lo, sp->prev + t->span_lo,
	               t->span_hi - t->span_lo);
}

/* Nodes from t->same_from on hold, in this round's batch, the bytes they
 * held in the round of t's memo (the saved shims are not read again
 * between heads rounds).  Between two rounds a stack mostly changes only
 * inside the nodes that changed the round before: those outside are
 * compared as one span, the rest node by node. */
static void find_same(struct pyd_sampler *sp, struct sthread *t)
{
	size_t j = t->npred;
	if (sp->reuse && t->nmemo && t->memo_round + 1 == sp->round) {
		bool span = span_same(sp, t);
		if (span)
			j = t->span_from;
		for (; j > 0; j--) {
			const struct pred *p = &t->pred[j - 1];
			if (!p->saved &&
			    (p->range >= sp->nread ||
			     memcmp(sp->buf + p->off, sp->prev + p->off,
			            p->len)))
				break;
		}
		/* A span that held stays: an innermost node that now and then
		 * reads the same must not make it flap. */
		if (!span)
			respan(sp, t, j);
	}
	t->same_from = j;
}

/* The frames from the index-th node on are the memo's if that node and
 * all after it read what they read then; else note where the node's
 * frames start, for the next memo. */
static bool batch_known(void *ctx, size_t index, uint64_t addr,
                        struct pyd_frame_buf *out)
{
	struct batch_reader *r = ctx;
	struct sthread *t = r->t;
	size_t base = out->n;
	/* Only at a node that pushed a frame: a shim marks the frame
	 * before it, which this round decoded afresh, as an entry.  The
	 * memo lies in out itself, where this round's frames so far
	 * overwrote its first base: it serves if its node's frames start
	 * no earlier. */
	if (r->use_batch && index >= t->same_from && index < t->npred &&
	    index < t->nmemo_at && t->pred[index].addr == addr &&
	    base <= t->memo_at[index] &&
	    t->memo_at[index] < (index + 1 < t->nmemo_at ? t->memo_at[index + 1]
	                                                 : t->nmemo)) {
		size_t from = t->memo_at[index], k = t->nmemo - from;
		if (from != base) {
			memmove(out->v + base, out->v + from,
			        k * sizeof *out->v);
			for (size_t j = index; j < t->nmemo_at; j++)
				t->memo_at[j] = t->memo_at[j] - from + base;
		}
		out->n += k;
		out->more = t->memo_more;
		t->same_out = k;
		r->walked = t->npred;
		r->spliced = true;
		return true;
	}
	if (!pyd_grow((void **)&t->memo_at, &t->memo_at_cap, index + 1,
	              sizeof *t->memo_at)) {
		r->memo_lost = true;
		return false;
	}
	t->memo_at[index] = base;
	return false;
}

/* After a walk: the frames it left in t->fb are the thread's memo. */
static void save_memo(struct pyd_sampler *sp, struct sthread *t,
                      const struct batch_reader *r)
{
	t->nmemo = r->memo_lost ? 0 : t->fb.n;
	t->nmemo_at = r->walked;
	t->memo_more = t->fb.more;
	t->memo_round = sp->round;
}

/* After a whole walk: keep copies of the shims that end the stack. */
static void save_tail(struct pyd_sampler *sp, struct sthread *t,
                      const struct batch_reader *r)
{
	for (size_t i = 0; i < r->ntail; i++) {
		struct pred *p = &t->pred[r->tail_index[i]];
		if (p->saved && p->slot == i)
			continue;
		memcpy(t->tail[i], sp->tail[i], p->len);
		p->saved = true;
		p->slot = (uint8_t)i;
		sp->plan_valid = false;
	}
}

/* The stack of thread t into t->fb: from the batch, then (if that
 * failed: a node changed between the batch and the walk, or the walk
 * caught the thread mid-change) read afresh, as often as a dump would
 * before the thread's sample is dropped. */
static enum pyd_err walk(struct pyd_sampler *sp, struct sthread *t)
{
	enum pyd_err err = PYD_OK;
	if (t->in_batch)
		find_same(sp, t);
	for (int attempt = 0; attempt < PYD_WALK_ATTEMPTS; attempt++) {
		struct batch_reader r = {
		    .sp = sp, .t = t, .use_batch = attempt == 0 && t->in_batch};
		struct pyd_node_reader nr = {batch_get, &r, batch_known, false};
		t->same_out = 0;
		err = pyd_walk_thread(sp->s, t->tstate, &nr, &t->fb,
		                      attempt + 1 == PYD_WALK_ATTEMPTS);
		if (r.walked < t->npred) {
			t->npred = r.walked;
			sp->plan_valid = false;
		}
		if (!err && r.walked == t->npred && !r.spliced)
			save_tail(sp, t, &r);
		if (!err) {
			save_memo(sp, t, &r);
			return err;
		}
		t->nmemo = 0; /* the failed walk wrote over it */
		if (err == PYD_E_EXITED || err == PYD_E_NOMEM)
			return err;
	}
	return err;
}

static bool push_frame(struct pyd_frame_buf *b, struct pyd_frame f)
{
	if (b->n == b->cap &&
	    !pyd_grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v))
		return false;
	b->v[b->n++] = f;
	return true;
}

/* Append n frames (innermost first), then the boundary frame outside
 * them that names their task or greenlet. */
static bool push_unit(struct pyd_frame_buf *b, const struct pyd_frame *v,
                      size_t n, const char *boundary)
{
	for (size_t i = 0; i < n; i++)
		if (!push_frame(b, v[i]))
			return false;
	return push_frame(b, (struct pyd_frame){.function = boundary});
}

/* A stack the walk cut at PYD_MAX_FRAMES is kept, its outer frames
 * standing as one: how many where the recursion counter tells (3.12+; it
 * counts generators run from C too), else just that some are left out. */
static bool mark_cut(struct pyd_sampler *sp, struct sthread *t)
{
	int64_t running = pyd_running_frames(sp->s, t->tstate);
	if (running > (int64_t)t->fb.n)
		snprintf(sp->cut, sizeof sp->cut, "<truncated %lld frames>",
		         (long long)(running - (int64_t)t->fb.n));
	else
		snprintf(sp->cut, sizeof sp->cut, "<truncated frames>");
	return push_frame(&t->fb,
	                  (struct pyd_frame){.function = sp->cut, .elided = true});
}

/* Put "<GC>" on top of thread t's stack (innermost first); its memo's
 * frames move, so there is none. */
static bool mark_gc(struct pyd_sampler *sp, struct sthread *t)
{
	struct pyd_frame_buf *b = &t->fb;
	t->nmemo = 0;
	if (!push_frame(b, (struct pyd_frame){0}))
		return false;
	memmove(b->v + 1, b->v, (b->n - 1) * sizeof *b->v);
	snprintf(sp->gc, sizeof sp->gc, "<GC>");
	b->v[0] = (struct pyd_frame){.function = sp->gc, .gc = true};
	return true;
}

static enum pyd_err record_greenlet(struct pyd_sampler *sp, struct sthread *t);

static enum pyd_err record(struct pyd_sampler *sp, struct sthread *t,
                           unsigned *nstacks)
{
	const struct pyd_frame_buf *b = &t->fb;
	if (!b->n)
		return PYD_OK;
	if (b->more && !mark_cut(sp, t))
		return PYD_E_NOMEM;
	if (t->tstate == sp->in[t->interp].collector && !mark_gc(sp, t))
		return PYD_E_NOMEM;
	(*nstacks)++;
	if (sp->mode == PYD_SAMPLE_GREENLET)
		return record_greenlet(sp, t);
	/* A cut stack's outermost frame is the mark, not the memo's. */
	return pyd_profile_add_same(sp->prof, sp->process, t->tid, t->name,
	                            b->v, b->n, b->more ? 0 : t->same_out);
}

/* ---- the modes ---- */

/* Tell the profile what the source said of thread t's run state; true
 * if it ran.  A state unknown tells nothing. */
static bool run_known(struct pyd_sampler *sp, const struct sthread *t,
                      enum pyd_thread_run run)
{
	if (run != PYD_RUN_UNKNOWN)
		pyd_profile_thread_run(sp->prof, sp->process, t->tid,
		                       run == PYD_RUN_RUNNING);
	return run == PYD_RUN_RUNNING;
}

/* Ask the source whether thread t is on a CPU (for idle threads): only
 * for threads never seen on one, once every RUN_NS. */
static bool ask_running(struct pyd_sampler *sp, const struct sthread *t)
{
	const struct pyd_memsrc *src = sp->s->src;
	enum pyd_thread_run run = PYD_RUN_UNKNOWN;
	if (src->thread_run)
		src->thread_run(src->ctx, t->tid, &run);
	return run_known(sp, t, run);
}

/* Which threads this round samples (before the batch: gil mode decides
 * after it). */
static enum pyd_err select_threads(struct pyd_sampler *sp)
{
	const struct pyd_memsrc *src = sp->s->src;
	for (size_t i = 0; i < sp->nth; i++) {
		struct sthread *t = &sp->th[i];
		bool in = sp->mode == PYD_SAMPLE_WALL ||
		          sp->mode == PYD_SAMPLE_EXCEPTION ||
		          sp->mode == PYD_SAMPLE_GREENLET;
		if (sp->mode == PYD_SAMPLE_GIL)
			in = t->tstate == sp->last_holder;
		enum pyd_thread_run run = PYD_RUN_UNKNOWN;
		if ((sp->mode == PYD_SAMPLE_CPU ||
		     sp->mode == PYD_SAMPLE_GREENLET) &&
		    src->thread_run) {
			enum pyd_err err =
			    src->thread_run(src->ctx, t->tid, &run);
			if (err == PYD_E_EXITED)
				return err;
		}
		t->run = run;
		if (sp->mode == PYD_SAMPLE_CPU)
			in = run == PYD_RUN_RUNNING;
		if (in != t->in_batch)
			sp->plan_valid = false;
		t->in_batch = in;
	}
	return PYD_OK;
}

/* _Py_THREAD_ATTACHED, tstate->state's value while a thread may run
 * Python (3.13-3.15) */
#define THREAD_ATTACHED 1

/* Free-threaded builds: the one thread of interpreter i attached to it
 * (the collector stops every other one for most of its run); 0 if none
 * is, or several are (the collector cannot be told: no <GC> frame). */
static uint64_t only_attached(struct pyd_sampler *sp, size_t i)
{
	const struct py_layout *L = &sp->s->layout;
	uint64_t found = 0;
	for (size_t k = 0; k < sp->nth; k++) {
		const struct sthread *t = &sp->th[k];
		int32_t state;
		if (t->interp != i ||
		    pyd_read_i32(sp->s, t->tstate + (uint64_t)L->tstate.state,
				 &state) ||
		    state != THREAD_ATTACHED)
			continue;
		if (found)
			return 0;
		found = t->tstate;
	}
	return found;
}

/* Which thread runs each interpreter's collector this round: the one
 * holding the GIL while gc.collecting (as last read) is set (the GIL is
 * read then, but for gil mode, where the batch has it); in a
 * free-threaded build, the one thread attached. */
static void find_collectors(struct pyd_sampler *sp, uint64_t holder)
{
	for (size_t i = 0; i < sp->nin; i++) {
		struct sinterp *in = &sp->in[i];
		int32_t collecting = 0;
		memcpy(&collecting, in->gc_buf, 4);
		in->collector = 0;
		if (!in->gc_addr || !collecting)
			continue;
		if (sp->s->layout.tstate.state != PYD_NO_FIELD) {
			in->collector = only_attached(sp, i);
			continue;
		}
		if (!in->gil_addr)
			continue;
		if (sp->mode != PYD_SAMPLE_GIL &&
		    pyd_read(sp->s->src, in->gil_addr, in->gil_buf, in->gil_len))
			continue;
		in->collector = sp->mode == PYD_SAMPLE_GIL
		                    ? holder
		                    : pyd_gil_decode(sp->s, in->gil_buf);
	}
}

/* Exception mode: is thread t raising or handling an exception?  Its
 * three fields come from the batch (pyd_in_exception says how). */
static bool in_exception(struct pyd_sampler *sp, const struct sthread *t)
{
	return pyd_in_exception(sp->s, &sp->exc_seen, t->tstate,
	                        pyd_u64_at(t->exc[0], 0),
	                        pyd_u64_at(t->exc[1], 0),
	                        pyd_u64_at(t->exc[2], 0));
}

/* How many threads wait for the GIL while holder holds it: asked of
 * the kernel (two system calls a thread), so once every GIL_ASK_NS, not
 * every round: the share of looks that found the GIL contended, and how
 * many waited, go to the profile's summary. */
#define GIL_ASK_NS 100000000LL

static void count_gil_waiters(struct pyd_sampler *sp, uint64_t holder)
{
	struct pyd_prof_meta *m = &sp->prof->meta;
	uint64_t waiting = 0;
	bool asked = false;
	for (size_t i = 0; i < sp->nth; i++) {
		const struct sthread *t = &sp->th[i];
		uint64_t gil = sp->in[t->interp].gil_struct;
		if (!gil || t->tstate == holder)
			continue;
		asked = true;
		waiting += pyd_waits_for_gil(sp->s->src, t->tid, gil);
	}
	if (!asked || !sp->s->src->futex_wait)
		return;
	m->gil_looks++;
	m->gil_contended += waiting > 0;
	m->gil_waiters += waiting;
	if (waiting > m->gil_waiters_max)
		m->gil_waiters_max = waiting;
}

static enum pyd_err sample_threads(struct pyd_sampler *sp, unsigned *nstacks)
{
	sp->round++;
	enum pyd_err err = select_threads(sp);
	if (!err)
		err = read_batch(sp);
	if (err)
		return err;
	sp->prev_gen = sp->plan_gen;
	sp->prev_round = sp->round;
	uint64_t holder = 0;
	if (sp->mode == PYD_SAMPLE_GIL) {
		for (size_t i = 0; i < sp->nin && !holder; i++)
			if (sp->in[i].gil_addr)
				holder =
				    pyd_gil_decode(sp->s, sp->in[i].gil_buf);
		sp->last_holder = holder;
	}
	find_collectors(sp, holder);
	if (sp->mode == PYD_SAMPLE_GIL && sp->now - sp->gil_asked >= GIL_ASK_NS) {
		sp->gil_asked = sp->now;
		count_gil_waiters(sp, holder);
	}
	/* Greenlet mode shows switched-out greenlets of sleeping threads
	 * too: no thread is left out as idle, so none is asked about. */
	bool ask_run = sp->mode != PYD_SAMPLE_GREENLET &&
	               sp->now - sp->run_asked >= RUN_NS;
	if (ask_run)
		sp->run_asked = sp->now;
	enum pyd_err failed = PYD_OK;
	for (size_t i = 0; i < sp->nth; i++) {
		struct sthread *t = &sp->th[i];
		if (sp->mode == PYD_SAMPLE_GIL ? t->tstate != holder
		                               : !t->in_batch)
			continue;
		if (sp->mode == PYD_SAMPLE_EXCEPTION && !in_exception(sp, t))
			continue;
		err = walk(sp, t);
		if (err == PYD_E_EXITED || err == PYD_E_NOMEM)
			return err;
		if (err) {
			failed = err;
			sp->stale =
			    true; /* maybe it ended: read the list again */
		} else if ((err = record(sp, t, nstacks))) {
			return err;
		} else if (!t->ran && sp->mode == PYD_SAMPLE_CPU) {
			t->ran = run_known(sp, t, PYD_RUN_RUNNING);
		} else if (!t->ran && ask_run) {
			t->ran = ask_running(sp, t);
		}
	}
	return failed;
}

/* ---- async mode ---- */

/* The task's coroutine chain, a boundary frame naming it, then the same
 * for the task awaiting it, up to a root task (or a cycle). */
static bool task_stack(struct pyd_sampler *sp, const struct pyd_task_graph *g,
                       long k)
{
	sp->fb.n = 0;
	for (size_t hops = 0; k >= 0 && hops <= g->ntasks; hops++) {
		const struct pyd_task *t = &g->tasks[k];
		if (!push_unit(&sp->fb, t->coro_stack, t->ncoro, sp->names[k]))
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
	if (plan_code_check(sp))
		pyd_readv(sp->s->src, sp->iov, sp->niov, &done);
	finish_code_check(sp, done);
}

static enum pyd_err sample_tasks(struct pyd_sampler *sp, unsigned *nstacks)
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
static bool mark_greenlet(struct pyd_sampler *sp, struct sthread *t)
{
	for (size_t i = 0; i < sp->gs.n; i++) {
		const struct pyd_greenlet *g = &sp->gs.g[i];
		if (g->state == PYD_GREENLET_RUNNING && g->thread == t->tid)
			return push_frame(&t->fb,
			                  (struct pyd_frame){.function =
			                                         sp->glabels[i]});
	}
	return true;
}

/* Thread t's stack under the greenlet it runs, counted as on a CPU
 * unless the OS has the thread asleep: a hub blocked in epoll_wait, a
 * greenlet in a call that blocks its thread, wait.  Its path is not
 * reused: the greenlet a thread runs may change from round to round. */
static enum pyd_err record_greenlet(struct pyd_sampler *sp, struct sthread *t)
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
static enum pyd_err sample_greenlets(struct pyd_sampler *sp,
                                     unsigned *nstacks)
{
	enum pyd_err err = read_greenlets(sp);
	if (err)
		return err;
	enum pyd_err threads = sample_threads(sp, nstacks);
	if (threads == PYD_E_EXITED || threads == PYD_E_NOMEM)
		return threads;
	for (size_t i = 0; !err && i < sp->gs.n; i++) {
		const struct pyd_greenlet *g = &sp->gs.g[i];
		if (g->state != PYD_GREENLET_SUSPENDED || g->error ||
		    !g->nframes)
			continue;
		sp->fb.n = 0;
		if (!push_unit(&sp->fb, g->frames, g->nframes, sp->glabels[i]))
			return PYD_E_NOMEM;
		err = pyd_profile_add_unit(sp->prof, sp->process, g->thread,
		                           thread_name(sp, g->thread), sp->fb.v,
		                           sp->fb.n, true, i);
		(*nstacks)++;
		sp->prof->meta.await_samples++;
	}
	return err ? err : threads;
}

/* ---- the API ---- */

enum pyd_err pyd_sampler_open(struct pyd_session *s, enum pyd_sample_mode mode,
                              struct pyd_profile *prof, uint32_t process,
                              struct pyd_sampler **out)
{
	struct pyd_sampler *sp = calloc(1, sizeof *sp);
	if (!sp)
		return PYD_E_NOMEM;
	sp->s = s;
	sp->prof = prof;
	sp->process = process;
	sp->mode = mode;
	sp->now = now_ns();
	sp->node_len = pyd_frame_node_len(&s->layout);
	pyd_prefetch_init(&sp->pf, s->src);
	/* A thread list that changes while it is walked (threads started and
	 * ended by the thousand a second) tears the walk: walk it again, as
	 * a round would, rather than refuse to start. */
	enum pyd_err err = PYD_E_READ;
	for (unsigned i = 0; i < PYD_WALK_ATTEMPTS &&
	                     (err == PYD_E_READ || err == PYD_E_TORN); i++)
		err = refresh(sp, true);
	/* Async mode needs the task decoder: say so now, not every round. */
	if (!err && mode == PYD_SAMPLE_ASYNC && !pyd_tasks_supported(s))
		err = PYD_E_UNSUPPORTED;
	/* Greenlet mode needs greenlet loaded, in a release we read. */
	if (!err && mode == PYD_SAMPLE_GREENLET) {
		err = pyd_dump_greenlets(s, &sp->gs);
		if (!err && (!sp->gs.loaded || sp->gs.unknown_layout))
			err = PYD_E_UNSUPPORTED;
		if (!err && !label_greenlets(sp))
			err = PYD_E_NOMEM;
		sp->greenlets_found = sp->now;
	}
	/* A free-threading build has no GIL to hold. */
	if (!err && mode == PYD_SAMPLE_GIL &&
	    s->layout.gil_model == PY_GIL_NONE)
		err = PYD_E_UNSUPPORTED;
	if (!err && mode == PYD_SAMPLE_EXCEPTION &&
	    (s->layout.exc.raised == PYD_NO_FIELD ||
	     s->layout.exc.handled == PYD_NO_FIELD))
		err = PYD_E_UNSUPPORTED;
	if (err) {
		pyd_sampler_close(sp);
		return err;
	}
	*out = sp;
	return PYD_OK;
}

void pyd_sampler_close(struct pyd_sampler *sp)
{
	if (!sp)
		return;
	free_threads(sp);
	free(sp->in);
	free(sp->iov);
	free(sp->sorted);
	free(sp->buf);
	free(sp->prev);
	free(sp->fb.v);
	pyd_prefetch_free(&sp->pf);
	if (sp->cold_state > 0)
		pyd_pagecache_free(&sp->cold);
	free(sp->names);
	free(sp->order);
	free(sp->codes);
	free(sp->code_hdrs);
	pyd_greenlet_set_free(&sp->gs);
	free(sp->glabels);
	free(sp);
}

static enum pyd_err sample_round(struct pyd_sampler *sp, unsigned *nstacks);

enum pyd_err pyd_sample(struct pyd_sampler *sp, unsigned *nstacks)
{
	return pyd_sample_at(sp, now_ns(), nstacks);
}

enum pyd_err pyd_sample_at(struct pyd_sampler *sp, int64_t now,
                           unsigned *nstacks)
{
	/* The round's one time, for what is due now and then. */
	sp->now = now;
	enum pyd_err err = sample_round(sp, nstacks);
	struct pyd_prof_meta *m = &sp->prof->meta;
	const char *why;
	if (!m->corrupt[0] && (why = pyd_session_corruption(sp->s)))
		snprintf(m->corrupt, sizeof m->corrupt, "%s", why);
	return err;
}

static enum pyd_err sample_round(struct pyd_sampler *sp, unsigned *nstacks)
{
	*nstacks = 0;
	pyd_session_refill(sp->s);
	bool periodic = sp->now - sp->refreshed > REFRESH_NS;
	if (periodic || sp->stale) {
		enum pyd_err err = refresh(sp, periodic);
		if (err)
			return err;
	}
	if (sp->mode == PYD_SAMPLE_ASYNC)
		return sample_tasks(sp, nstacks);
	if (sp->mode == PYD_SAMPLE_GREENLET)
		return sample_greenlets(sp, nstacks);
	return sample_threads(sp, nstacks);
}

/* ---- pacing ---- */

/* Sleep to the next tick; ticks already past are missed, not made up. */
static void pace(int64_t *next, int64_t interval, uint64_t *missed)
{
	*next += interval;
	int64_t now = now_ns();
	if (now > *next) {
		int64_t late = (now - *next) / interval;
		*missed += (uint64_t)late;
		*next += late * interval;
		return;
	}
	struct timespec ts = {*next / 1000000000LL, *next % 1000000000LL};
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static enum pyd_sample_end loop(struct pyd_sampler *sp,
                                const struct pyd_sample_loop *l,
                                struct pyd_prof_meta *m, int64_t start)
{
	int64_t next = start;
	int64_t end = l->max_seconds > 0
	                  ? start + (int64_t)(l->max_seconds * 1e9)
	                  : INT64_MAX;
	int64_t interval = l->rate > 0 ? (int64_t)(1e9 / l->rate) : 0;
	for (;;) {
		if (l->stop && l->stop(l->ctx))
			return PYD_END_STOPPED;
		int64_t now = now_ns();
		if (now >= end)
			return PYD_END_TIME;
		if (l->max_rounds && m->ticks >= l->max_rounds)
			return PYD_END_ROUNDS;
		unsigned n = 0;
		m->round_us = (uint64_t)(now - start) / 1000;
		enum pyd_err err =
		    l->round ? l->round(l->ctx, now, &n)
		             : pyd_sample_at(sp, now, &n);
		m->ticks++;
		m->samples += n;
		if (err == PYD_E_EXITED)
			return PYD_END_EXITED;
		if (err == PYD_E_NOMEM)
			return PYD_END_NOMEM;
		if (err)
			m->errors++;
		if (l->tick)
			l->tick(l->ctx, m);
		if (interval)
			pace(&next, interval, &m->missed);
	}
}

enum pyd_sample_end pyd_sample_loop(struct pyd_sampler *sp,
                                    const struct pyd_sample_loop *l,
                                    struct pyd_prof_meta *m)
{
	int64_t start = now_ns();
	enum pyd_sample_end e = loop(sp, l, m, start);
	m->duration_s = (double)(now_ns() - start) / 1e9;
	m->interval_s = m->ticks ? m->duration_s / (double)m->ticks : 0;
	return e;
}

const char *pyd_sample_end_text(enum pyd_sample_end e)
{
	static const char *const text[] = {
	    [PYD_END_ROUNDS] = "samples taken",
	    [PYD_END_TIME] = "duration reached",
	    [PYD_END_STOPPED] = "interrupted",
	    [PYD_END_EXITED] = "the target exited",
	    [PYD_END_NOMEM] = "out of memory",
	};
	return (unsigned)e <= PYD_END_NOMEM ? text[e] : "stopped";
}
