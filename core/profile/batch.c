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

#include "../grow.h"
#include "../decode/code.h"
#include "../decode/objects.h"
#include "../decode/walk.h"
#include "modes.h"
#include "rounds.h"

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

/* The fields the round decides on, as its mode's row reads them: the
 * GIL, each thread's exceptions. */
static bool plan_fields(struct pyd_sampler *sp)
{
	const struct py_layout *L = &sp->s->layout;
	bool ok = true;
	unsigned reads = sp->row->reads;
	for (size_t i = 0; (reads & PYD_READ_GIL) && i < sp->nin; i++)
		if (sp->in[i].gil_addr)
			ok &= push_iov(sp, sp->in[i].gil_addr,
			               sp->in[i].gil_buf, sp->in[i].gil_len);
	const int32_t exc[3] = {L->exc.raised, L->exc.handled, L->exc.info};
	for (size_t i = 0; (reads & PYD_READ_EXC) && i < sp->nth; i++)
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
		struct pyd_sampled_thread *t = &sp->th[i];
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
bool pyd_batch_plan_code_check(struct pyd_sampler *sp)
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
void pyd_batch_finish_code_check(struct pyd_sampler *sp, size_t nread)
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
enum pyd_err pyd_batch_read(struct pyd_sampler *sp)
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
	if (heads && !pyd_batch_plan_code_check(sp))
		return PYD_E_NOMEM;
	size_t done = 0;
	err = pyd_readv(sp->s->src, sp->iov, heads ? sp->niov : sp->nranges,
	                &done);
	if (heads)
		pyd_batch_finish_code_check(sp, done > sp->nplan ? done - sp->nplan : 0);
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
	struct pyd_sampled_thread *t;
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

static void predict(struct pyd_sampler *sp, struct pyd_sampled_thread *t, size_t index,
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
	struct pyd_sampled_thread *t = r->t;
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
static void set_span(struct pyd_sampler *sp, struct pyd_sampled_thread *t, size_t from)
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
static void respan(struct pyd_sampler *sp, struct pyd_sampled_thread *t, size_t from)
{
	if (t->span_gen != sp->plan_gen || t->span_from != from)
		set_span(sp, t, from);
	else
		t->span_wide = true;
}

/* Do t's nodes from span_from on hold, in this round's batch, the bytes
 * they held in the last round's?  The bytes between them are compared
 * too: a difference there only sends find_same node by node. */
static bool span_same(const struct pyd_sampler *sp, const struct pyd_sampled_thread *t)
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
static void find_same(struct pyd_sampler *sp, struct pyd_sampled_thread *t)
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
	struct pyd_sampled_thread *t = r->t;
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
static void save_memo(struct pyd_sampler *sp, struct pyd_sampled_thread *t,
                      const struct batch_reader *r)
{
	t->nmemo = r->memo_lost ? 0 : t->fb.n;
	t->nmemo_at = r->walked;
	t->memo_more = t->fb.more;
	t->memo_round = sp->round;
}

/* After a whole walk: keep copies of the shims that end the stack. */
static void save_tail(struct pyd_sampler *sp, struct pyd_sampled_thread *t,
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
enum pyd_err pyd_batch_walk(struct pyd_sampler *sp, struct pyd_sampled_thread *t)
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

bool pyd_frames_push(struct pyd_frame_buf *b, struct pyd_frame f)
{
	if (b->n == b->cap &&
	    !pyd_grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v))
		return false;
	b->v[b->n++] = f;
	return true;
}

/* Append n frames (innermost first), then the boundary frame outside
 * them that names their task or greenlet. */
bool pyd_frames_push_unit(struct pyd_frame_buf *b, const struct pyd_frame *v,
                      size_t n, const char *boundary)
{
	for (size_t i = 0; i < n; i++)
		if (!pyd_frames_push(b, v[i]))
			return false;
	return pyd_frames_push(b, (struct pyd_frame){.function = boundary});
}

