/*
 * Threads and their Python stacks.
 *
 * Interpreters hang off _PyRuntime (3.7+) or interp_head (3.6); threads off
 * each interpreter; frames off each thread.  How frames are chained is a
 * layout feature (frame objects, _PyCFrame, current_frame), and so is the
 * instruction pointer that gives the line.  A live target keeps running
 * while we read, so a thread whose stack changed under us is read again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "thread_names.h"
#include "unicode.h"

/* Sub-interpreters and threads we list at most: a loop in a corrupt list
 * must end. */
#define MAX_INTERPS 4096
#define MAX_THREADS 65536
/* Times we re-read a stack that changed under us. */
#define MAX_RETRIES 8
/* glibc x86-64: offsetof(struct pthread, tid).  Before 3.8 the thread
 * state only has pthread_self(), which points at that struct. */
#define GLIBC_PTHREAD_TID 0x2d0

/* <= 3.10: PyFrameObject chain. */
static enum pyd_err walk_frame_objects(struct pyd_session *s, uint64_t f,
				       struct pyd_frame_buf *out)
{
	const struct py_layout *L = &s->layout;
	uint8_t buf[128];
	size_t need = (size_t)L->frame_object.f_lasti + 4;
	if (need > sizeof buf)
		return PYD_E_READ;
	while (f) {
		if (out->n >= PYD_MAX_FRAMES)
			return PYD_E_TORN;
		enum pyd_err err = pyd_read(s->src, f, buf, need);
		if (err)
			return err;
		uint64_t back, code;
		int32_t lasti;
		memcpy(&back, buf + L->frame_object.f_back, 8);
		memcpy(&code, buf + L->frame_object.f_code, 8);
		memcpy(&lasti, buf + L->frame_object.f_lasti, 4);
		const struct pyd_code *c = pyd_code_get(s, code);
		if (!c)
			return PYD_E_READ;
		/* 3.10 counts f_lasti in 2-byte code units. */
		int off = L->line_model == PY_LINES_310 && lasti >= 0 ? lasti * 2
								      : lasti;
		if (!pyd_frame_push(out, c, pyd_code_line(s, c, off)))
			return PYD_E_NOMEM;
		f = back;
	}
	return PYD_OK;
}

/* 3.11+: _PyInterpreterFrame chain. */
static enum pyd_err walk_interp_frames(struct pyd_session *s, uint64_t f,
				       struct pyd_frame_buf *out)
{
	const struct py_layout *L = &s->layout;
	uint8_t buf[128];
	int32_t hi = L->iframe.owner;
	if (L->iframe.instr > hi)
		hi = L->iframe.instr + 7;
	if (L->iframe.previous + 7 > hi)
		hi = L->iframe.previous + 7;
	if (L->iframe.code + 7 > hi)
		hi = L->iframe.code + 7;
	size_t need = (size_t)hi + 1;
	if (need > sizeof buf)
		return PYD_E_READ;
	size_t steps = 0;
	while (f) {
		if (++steps > PYD_MAX_FRAMES)
			return PYD_E_TORN;
		enum pyd_err err = pyd_read(s->src, f, buf, need);
		if (err)
			return err;
		uint64_t prev, code, instr;
		memcpy(&prev, buf + L->iframe.previous, 8);
		memcpy(&code, buf + L->iframe.code, 8);
		memcpy(&instr, buf + L->iframe.instr, 8);
		code &= ~L->code_tag_mask;
		int owner = buf[L->iframe.owner];
		f = prev;
		/* C-stack shims and interpreter base frames run no Python. */
		if (L->owner_first_shim != PYD_NO_FIELD &&
		    owner >= L->owner_first_shim)
			continue;
		if ((err = pyd_frame_push_iframe(s, out, code, instr)))
			return err;
	}
	return PYD_OK;
}

/* The first frame of a thread, or 0 if it runs no Python right now. */
static enum pyd_err top_frame(struct pyd_session *s, uint64_t tstate,
			      uint64_t *frame)
{
	const struct py_layout *L = &s->layout;
	enum pyd_err err = pyd_read_ptr(s, tstate + (uint64_t)L->tstate.frame, frame);
	if (err || L->frame_model != PY_FRAMES_CFRAME || !*frame)
		return err;
	return pyd_read_ptr(s, *frame + (uint64_t)L->cframe.current_frame, frame);
}

static enum pyd_err walk_once(struct pyd_session *s, uint64_t tstate,
			      struct pyd_frame_buf *out, uint64_t *top)
{
	out->n = 0;
	enum pyd_err err = top_frame(s, tstate, top);
	if (err || !*top)
		return err;
	if (s->layout.frame_model == PY_FRAMES_OBJECT)
		return walk_frame_objects(s, *top, out);
	return walk_interp_frames(s, *top, out);
}

/*
 * Walk a thread's stack until two reads agree on where it starts and the
 * walk itself went through: a frame freed mid-walk shows up as a bad read.
 */
static enum pyd_err walk_stable(struct pyd_session *s, uint64_t tstate,
				struct pyd_frame_buf *out, unsigned *retries)
{
	enum pyd_err err = PYD_OK;
	for (unsigned i = 0; i <= MAX_RETRIES; i++) {
		uint64_t top = 0, again = 0;
		err = walk_once(s, tstate, out, &top);
		if (err == PYD_E_EXITED || err == PYD_E_NOMEM)
			return err;
		enum pyd_err err2 = top_frame(s, tstate, &again);
		if (err2 == PYD_E_EXITED)
			return err2;
		if (!err && !err2 && again == top)
			return PYD_OK;
		if (i < MAX_RETRIES)
			(*retries)++;
	}
	return err ? err : PYD_E_TORN;
}

static uint64_t gil_holder(struct pyd_session *s, uint64_t interp)
{
	const struct py_layout *L = &s->layout;
	uint64_t holder = 0, gil = 0;
	int32_t locked = 0;
	switch (L->gil_model) {
	case PY_GIL_SYMBOL:
		if (s->rt.tstate_current_addr)
			pyd_read_ptr(s, s->rt.tstate_current_addr, &holder);
		break;
	case PY_GIL_RUNTIME_TSTATE:
		pyd_read_ptr(s, s->rt.runtime_addr +
				       (uint64_t)L->runtime.tstate_current,
			     &holder);
		break;
	case PY_GIL_INTERP_STATE:
		if (pyd_read_ptr(s, interp + (uint64_t)L->interp.gil_ptr, &gil) ||
		    !gil ||
		    pyd_read_i32(s, gil + (uint64_t)L->gil.locked, &locked) ||
		    !locked)
			return 0;
		pyd_read_ptr(s, gil + (uint64_t)L->gil.last_holder, &holder);
		break;
	}
	return holder;
}

static int64_t thread_tid(struct pyd_session *s, uint64_t tstate)
{
	const struct py_layout *L = &s->layout;
	uint64_t v = 0;
	if (L->tstate.native_thread_id != PYD_NO_FIELD) {
		pyd_read_ptr(s, tstate + (uint64_t)L->tstate.native_thread_id, &v);
		return (int64_t)v;
	}
	int32_t tid = 0;
	if (pyd_read_ptr(s, tstate + (uint64_t)L->tstate.thread_id, &v) || !v ||
	    pyd_read_i32(s, v + GLIBC_PTHREAD_TID, &tid))
		return 0;
	return tid;
}

static const struct pyd_os_thread *find_os_thread(const struct pyd_os_thread *t,
						  size_t n, int64_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return &t[i];
	return NULL;
}

static enum pyd_err first_interp(struct pyd_session *s, uint64_t *interp)
{
	const struct py_layout *L = &s->layout;
	*interp = 0;
	if (s->rt.runtime_addr)
		return pyd_read_ptr(s, s->rt.runtime_addr +
					       (uint64_t)L->runtime.interpreters_head,
				    interp);
	/* 3.6: interp_head is static, so only in .symtab; a thread that
	 * holds the GIL also leads to its interpreter. */
	if (s->rt.interp_head_addr)
		return pyd_read_ptr(s, s->rt.interp_head_addr, interp);
	uint64_t ts = 0;
	if (s->rt.tstate_current_addr &&
	    !pyd_read_ptr(s, s->rt.tstate_current_addr, &ts) && ts)
		return pyd_read_ptr(s, ts + (uint64_t)L->tstate.interp, interp);
	return PYD_E_READ;
}

struct dump_ctx {
	struct pyd_session *s;
	struct pyd_dump *d;
	const struct pyd_os_thread *os;
	size_t nos;
	size_t cap;
};

static enum pyd_err add_thread(struct dump_ctx *c, uint64_t tstate,
			       int64_t interp_id, uint64_t holder)
{
	struct pyd_dump *d = c->d;
	if (d->nthreads == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		void *p = realloc(d->threads, cap * sizeof *d->threads);
		if (!p)
			return PYD_E_NOMEM;
		d->threads = p;
		c->cap = cap;
	}
	struct pyd_thread *t = &d->threads[d->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = thread_tid(c->s, tstate);
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
	struct pyd_frame_buf fb = {0};
	t->error = walk_stable(c->s, tstate, &fb, &d->retries);
	t->frames = fb.v;
	t->nframes = fb.n;
	t->truncated = fb.n >= PYD_MAX_FRAMES;
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

static enum pyd_err dump_interp(struct dump_ctx *c, uint64_t interp)
{
	size_t first = c->d->nthreads;
	struct pyd_session *s = c->s;
	const struct py_layout *L = &s->layout;
	int64_t id = 0;
	if (L->interp.id != PYD_NO_FIELD)
		pyd_read_ptr(s, interp + (uint64_t)L->interp.id, (uint64_t *)&id);
	uint64_t holder = gil_holder(s, interp), ts;
	enum pyd_err err = pyd_read_ptr(s, interp + (uint64_t)L->interp.tstate_head,
					&ts);
	for (size_t n = 0; !err && ts && n < MAX_THREADS; n++) {
		if ((err = add_thread(c, ts, id, holder)))
			break;
		err = pyd_read_ptr(s, ts + (uint64_t)L->tstate.next, &ts);
	}
	if (!err)
		pyd_thread_names(s, interp, c->d->threads + first,
				 c->d->nthreads - first);
	return err;
}

enum pyd_err pyd_dump_stacks(struct pyd_session *s, struct pyd_dump *d)
{
	memset(d, 0, sizeof *d);
	struct dump_ctx c = {.s = s, .d = d};
	if (s->src->threads)
		s->src->threads(s->src->ctx, &c.os, &c.nos);
	uint64_t interp;
	enum pyd_err err = first_interp(s, &interp);
	while (!err && interp && d->ninterps < MAX_INTERPS) {
		d->ninterps++;
		if ((err = dump_interp(&c, interp)))
			break;
		err = pyd_read_ptr(s, interp + (uint64_t)s->layout.interp.next,
				   &interp);
	}
	if (!err && d->ninterps == 0)
		err = PYD_E_NOTPYTHON;
	reverse_threads(d->threads, d->nthreads);
	return err;
}

void pyd_dump_free(struct pyd_dump *d)
{
	for (size_t i = 0; i < d->nthreads; i++)
		free(d->threads[i].frames);
	free(d->threads);
	memset(d, 0, sizeof *d);
}
