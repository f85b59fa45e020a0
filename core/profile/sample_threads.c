/*
 * The rounds of the modes that sample threads (wall, cpu, gil,
 * exception; greenlet's threads too): which threads a round walks, as the
 * mode's row picks them, what it records of each, and what it asks the
 * OS of them (on a CPU or idle; who waits for the GIL).
 */
#include <stdio.h>
#include <string.h>

#include "../decode/objects.h"
#include "modes.h"
#include "rounds.h"

/* A stack the walk cut at PYD_MAX_FRAMES is kept, its outer frames
 * standing as one: how many where the recursion counter tells (3.12+; it
 * counts generators run from C too), else just that some are left out. */
static bool mark_cut(struct pyd_sampler *sp, struct pyd_sampled_thread *t)
{
	int64_t running = pyd_running_frames(sp->s, t->tstate);
	if (running > (int64_t)t->fb.n)
		snprintf(sp->cut, sizeof sp->cut, "<truncated %lld frames>",
		         (long long)(running - (int64_t)t->fb.n));
	else
		snprintf(sp->cut, sizeof sp->cut, "<truncated frames>");
	return pyd_frames_push(&t->fb,
	                  (struct pyd_frame){.function = sp->cut, .elided = true});
}

/* Put "<GC>" on top of thread t's stack (innermost first); its memo's
 * frames move, so there is none. */
static bool mark_gc(struct pyd_sampler *sp, struct pyd_sampled_thread *t)
{
	struct pyd_frame_buf *b = &t->fb;
	t->nmemo = 0;
	if (!pyd_frames_push(b, (struct pyd_frame){0}))
		return false;
	memmove(b->v + 1, b->v, (b->n - 1) * sizeof *b->v);
	snprintf(sp->gc, sizeof sp->gc, "<GC>");
	b->v[0] = (struct pyd_frame){.function = sp->gc, .gc = true};
	return true;
}

static enum pyd_err record(struct pyd_sampler *sp, struct pyd_sampled_thread *t,
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
	if (sp->row->record)
		return sp->row->record(sp, t);
	/* A cut stack's outermost frame is the mark, not the memo's. */
	return pyd_profile_add_same(sp->prof, sp->process, t->tid, t->name,
	                            b->v, b->n, b->more ? 0 : t->same_out);
}

/* Tell the profile what the source said of thread t's run state; true
 * if it ran.  A state unknown tells nothing. */
static bool run_known(struct pyd_sampler *sp, const struct pyd_sampled_thread *t,
                      enum pyd_thread_run run)
{
	if (run != PYD_RUN_UNKNOWN)
		pyd_profile_thread_run(sp->prof, sp->process, t->tid,
		                       run == PYD_RUN_RUNNING);
	return run == PYD_RUN_RUNNING;
}

/* Ask the source whether thread t is on a CPU (for idle threads): only
 * for threads never seen on one, once every RUN_NS. */
static bool ask_running(struct pyd_sampler *sp, const struct pyd_sampled_thread *t)
{
	const struct pyd_memsrc *src = sp->s->src;
	enum pyd_thread_run run = PYD_RUN_UNKNOWN;
	if (src->thread_run)
		src->thread_run(src->ctx, t->tid, &run);
	return run_known(sp, t, run);
}

/* Which threads this round reads in its batch, as the mode picks them:
 * those it will walk, or (picked by what the batch reads: the GIL
 * holder, threads in an exception) those it may. */
static enum pyd_err select_threads(struct pyd_sampler *sp)
{
	const struct pyd_memsrc *src = sp->s->src;
	enum pyd_mode_pick pick = sp->row->pick;
	bool ask = pick == PYD_PICK_ON_CPU ||
	           (sp->row->reads & PYD_READ_RUN_STATE);
	for (size_t i = 0; i < sp->nth; i++) {
		struct pyd_sampled_thread *t = &sp->th[i];
		bool in = pick == PYD_PICK_ALL || pick == PYD_PICK_IN_EXCEPTION;
		if (pick == PYD_PICK_GIL_HOLDER)
			in = t->tstate == sp->last_holder; /* predicted */
		enum pyd_thread_run run = PYD_RUN_UNKNOWN;
		if (ask && src->thread_run) {
			enum pyd_err err =
			    src->thread_run(src->ctx, t->tid, &run);
			if (err == PYD_E_EXITED)
				return err;
		}
		t->run = run;
		if (pick == PYD_PICK_ON_CPU)
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
		const struct pyd_sampled_thread *t = &sp->th[k];
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
 * read then, unless the batch had it: PYD_READ_GIL); in a free-threaded
 * build, the one thread attached. */
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
		bool batched = sp->row->reads & PYD_READ_GIL;
		if (!batched &&
		    pyd_read(sp->s->src, in->gil_addr, in->gil_buf, in->gil_len))
			continue;
		in->collector =
		    batched ? holder : pyd_gil_decode(sp->s, in->gil_buf);
	}
}

/* Is thread t raising or handling an exception?  Its three fields come
 * from the batch (PYD_READ_EXC; pyd_in_exception says how). */
static bool in_exception(struct pyd_sampler *sp, const struct pyd_sampled_thread *t)
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
		const struct pyd_sampled_thread *t = &sp->th[i];
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

/* Does this round walk thread t, which the mode picked for the batch? */
static bool picked(struct pyd_sampler *sp, const struct pyd_sampled_thread *t,
                   uint64_t holder)
{
	switch (sp->row->pick) {
	case PYD_PICK_GIL_HOLDER:
		return t->tstate == holder;
	case PYD_PICK_IN_EXCEPTION:
		return t->in_batch && in_exception(sp, t);
	default:
		return t->in_batch;
	}
}

/* The GIL's holder, as the batch read it (PYD_READ_GIL), else 0. */
static uint64_t gil_holder(struct pyd_sampler *sp)
{
	uint64_t holder = 0;
	for (size_t i = 0; (sp->row->reads & PYD_READ_GIL) && i < sp->nin &&
	                   !holder;
	     i++)
		if (sp->in[i].gil_addr)
			holder = pyd_gil_decode(sp->s, sp->in[i].gil_buf);
	return holder;
}

enum pyd_err pyd_round_threads(struct pyd_sampler *sp, unsigned *nstacks)
{
	sp->round++;
	enum pyd_err err = select_threads(sp);
	if (!err)
		err = pyd_batch_read(sp);
	if (err)
		return err;
	sp->prev_gen = sp->plan_gen;
	sp->prev_round = sp->round;
	uint64_t holder = sp->last_holder = gil_holder(sp);
	find_collectors(sp, holder);
	if ((sp->row->reads & PYD_READ_GIL_WAITERS) &&
	    sp->now - sp->gil_asked >= GIL_ASK_NS) {
		sp->gil_asked = sp->now;
		count_gil_waiters(sp, holder);
	}
	/* A mode whose every thread counts, asleep or not (greenlet mode's),
	 * leaves none out as idle, so none is asked about. */
	bool ask_run = sp->row->idle_threads &&
	               sp->now - sp->run_asked >= RUN_NS;
	if (ask_run)
		sp->run_asked = sp->now;
	enum pyd_err failed = PYD_OK;
	for (size_t i = 0; i < sp->nth; i++) {
		struct pyd_sampled_thread *t = &sp->th[i];
		if (!picked(sp, t, holder))
			continue;
		err = pyd_batch_walk(sp, t);
		if (err == PYD_E_EXITED || err == PYD_E_NOMEM)
			return err;
		if (err) {
			failed = err;
			sp->stale =
			    true; /* maybe it ended: read the list again */
		} else if ((err = record(sp, t, nstacks))) {
			return err;
		} else if (!t->ran && sp->row->pick == PYD_PICK_ON_CPU) {
			t->ran = run_known(sp, t, PYD_RUN_RUNNING);
		} else if (!t->ran && ask_run) {
			t->ran = ask_running(sp, t);
		}
	}
	return failed;
}

/* A free-threading build has no GIL to hold. */
enum pyd_err pyd_open_gil(struct pyd_sampler *sp)
{
	return sp->s->layout.gil_model == PY_GIL_NONE ? PYD_E_UNSUPPORTED
	                                              : PYD_OK;
}

enum pyd_err pyd_open_exception(struct pyd_sampler *sp)
{
	const struct py_layout *L = &sp->s->layout;
	return L->exc.raised == PYD_NO_FIELD || L->exc.handled == PYD_NO_FIELD
	           ? PYD_E_UNSUPPORTED
	           : PYD_OK;
}
