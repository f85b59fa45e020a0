/*
 * The sampler: its thread list, kept from round to round (names, the
 * walks' predictions), the rounds its mode's row takes, and the loop
 * that paces them.  How a round reads and walks: batch.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "../decode/objects.h"
#include "../decode/thread_names.h"
#include "../decode/unicode.h"
#include "../decode/walk.h"
#include "modes.h"
#include "rounds.h"
#include "sampler.h"

/* ---- the thread list ---- */

static void free_thread(struct pyd_sampled_thread *t)
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
static void keep_thread(struct pyd_sampled_thread *t, struct pyd_sampled_thread *old, size_t nold)
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
		struct pyd_sampled_thread *st = &sp->th[first + i];
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
                               struct pyd_sampled_thread *old, size_t nold, bool names)
{
	struct sinterp *in = &sp->in[sp->nin];
	memset(in, 0, sizeof *in);
	in->addr = interp;
	if (!pyd_gil_probe(sp->s, interp, &in->gil_addr, &in->gil_len) ||
	    in->gil_len > sizeof in->gil_buf)
		in->gil_addr = 0;
	in->gil_struct = sp->row->reads & PYD_READ_GIL_WAITERS
	                     ? pyd_gil_struct(sp->s, interp)
	                     : 0;
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
		struct pyd_sampled_thread *t = &sp->th[sp->nth++];
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
	struct pyd_sampled_thread *old = sp->th;
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
	sp->row = pyd_sample_mode(mode);
	sp->now = pyd_now_ns();
	sp->node_len = pyd_frame_node_len(&s->layout);
	pyd_prefetch_init(&sp->pf, s->src);
	/* A thread list that changes while it is walked (threads started and
	 * ended by the thousand a second) tears the walk: walk it again, as
	 * a round would, rather than refuse to start. */
	enum pyd_err err = PYD_E_READ;
	for (unsigned i = 0; i < PYD_WALK_ATTEMPTS &&
	                     (err == PYD_E_READ || err == PYD_E_TORN); i++)
		err = refresh(sp, true);
	/* What the mode needs of the target: say so now, not every round. */
	if (!err && sp->row->open)
		err = sp->row->open(sp);
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
	return pyd_sample_at(sp, pyd_now_ns(), nstacks);
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
	return sp->row->round(sp, nstacks);
}

/* ---- pacing ---- */

/* Sleep to the next tick; ticks already past are missed, not made up. */
static void pace(int64_t *next, int64_t interval, uint64_t *missed)
{
	*next += interval;
	int64_t now = pyd_now_ns();
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
		int64_t now = pyd_now_ns();
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
	int64_t start = pyd_now_ns();
	enum pyd_sample_end e = loop(sp, l, m, start);
	m->duration_s = (double)(pyd_now_ns() - start) / 1e9;
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

