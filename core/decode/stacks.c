/*
 * Threads and their Python stacks.
 *
 * Interpreters hang off _PyRuntime (3.7+) or interp_head (3.6); threads off
 * each interpreter; frames off each thread.  How frames are chained is a
 * layout feature (frame objects, _PyCFrame, current_frame), and so is the
 * instruction pointer that gives the line.  A live target keeps running
 * while we read, so a thread whose stack changed under us is read again.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../memsrc/pagecache.h"
#include "../grow.h"
#include "code.h"
#include "objects.h"
#include "session.h"
#include "thread_names.h"
#include "unicode.h"
#include "walk.h"

size_t pyd_frame_node_len(const struct py_layout *L)
{
	int32_t hi;
	if (L->frame_model == PY_FRAMES_OBJECT) {
		hi = L->frame_object.f_lasti + 4;
		if (L->frame_object.f_back + 8 > hi)
			hi = L->frame_object.f_back + 8;
		return (size_t)(L->frame_object.f_code + 8 > hi
					? L->frame_object.f_code + 8
					: hi);
	}
	hi = L->iframe.owner + 1;
	int32_t ptrs[] = {L->iframe.instr, L->iframe.previous, L->iframe.code};
	for (size_t i = 0; i < 3; i++)
		if (ptrs[i] + 8 > hi)
			hi = ptrs[i] + 8;
	return (size_t)hi;
}

/* <= 3.10: a PyFrameObject; its f_back is next.  *end: what the chain
 * would be if it ended here (a generator's frame is a thread's first
 * only when C code ran it first, which a read cannot tell from one
 * caught between a yield and the next resume). */
static enum pyd_err frame_object(struct pyd_session *s, const uint8_t *buf,
				 struct pyd_frame_buf *out, uint64_t *next,
				 enum pyd_walk_end *end)
{
	const struct py_layout *L = &s->layout;
	int32_t lasti;
	memcpy(&lasti, buf + L->frame_object.f_lasti, 4);
	*next = pyd_u64_at(buf, L->frame_object.f_back);
	const struct pyd_code *c =
		pyd_code_get(s, pyd_u64_at(buf, L->frame_object.f_code));
	if (!c)
		return PYD_E_READ;
	/* A 3.10 f_lasti too large to double is corrupt: an offset past
	 * any code. */
	int64_t off = pyd_lasti_offset(L, lasti);
	int line = pyd_code_line_cached(s, c, off > INT_MAX ? INT_MAX : (int)off);
	if (!pyd_frame_push(out, c, line))
		return PYD_E_NOMEM;
	/* Before 3.11 every Python call is a call of the evaluation loop. */
	out->v[out->n - 1].entry = true;
	*end = out->v[out->n - 1].generator ? PYD_WALK_DOUBT : PYD_WALK_WHOLE;
	return PYD_OK;
}

/* Is the interpreter frame in buf a C-stack shim or interpreter base
 * frame (3.12+; a shim sits right behind the frame that C code
 * entered)? */
static bool shim_frame(const struct py_layout *L, const uint8_t *buf)
{
	return L->owner_first_shim != PYD_NO_FIELD &&
	       buf[L->iframe.owner] >= L->owner_first_shim;
}

/* The code object of the interpreter frame in buf (NULL: not one), and
 * its offset into *off. */
static const struct pyd_code *frame_code(struct pyd_session *s,
					 const uint8_t *buf, int64_t *off)
{
	const struct py_layout *L = &s->layout;
	uint64_t code = pyd_u64_at(buf, L->iframe.code) & ~L->code_tag_mask;
	return pyd_code_get_at(s, code, pyd_u64_at(buf, L->iframe.instr), off);
}

/* Is the interpreter frame in buf, no shim, running code object c at
 * offset off, one not yet past its code's first traceable instruction
 * (_PyFrame_IsIncomplete: its set-up, or the interpreter's own __init__
 * trampoline, 3.13+)?  The interpreter's own shim code runs no Python
 * even where a read catches its frame before it is marked a shim. */
static bool incomplete_frame(const struct py_layout *L, const uint8_t *buf,
			     const struct pyd_code *c, int64_t off)
{
	if (c && c->shim)
		return true;
	return buf[L->iframe.owner] != L->owner_generator && c &&
	       off < c->traceable_from;
}

/* Is the interpreter frame in buf one a traceback leaves out, a shim or
 * an incomplete frame?  Such a frame pushes nothing. */
static bool hidden_frame(struct pyd_session *s, const uint8_t *buf)
{
	int64_t off;
	if (shim_frame(&s->layout, buf))
		return true;
	const struct pyd_code *c = frame_code(s, buf, &off);
	return incomplete_frame(&s->layout, buf, c, off);
}

/* 3.11+: a _PyInterpreterFrame; previous is next.  *end as for
 * frame_object.  From 3.12 every run of the evaluation loop starts at a
 * shim: a chain ends at one, and at one that has a Python frame inside
 * it unless the thread is just leaving its last. */
static enum pyd_err interp_frame(struct pyd_session *s, const uint8_t *buf,
				 struct pyd_frame_buf *out, uint64_t *next,
				 enum pyd_walk_end *end)
{
	const struct py_layout *L = &s->layout;
	bool shims = L->owner_first_shim != PYD_NO_FIELD;
	*next = pyd_u64_at(buf, L->iframe.previous);
	if (shim_frame(L, buf)) {
		*end = out->n ? PYD_WALK_WHOLE : PYD_WALK_DOUBT;
		if (out->n)
			out->v[out->n - 1].entry = true;
		return PYD_OK;
	}
	int64_t off;
	const struct pyd_code *c = frame_code(s, buf, &off);
	if (incomplete_frame(L, buf, c, off)) {
		*end = shims ? PYD_WALK_TORN : PYD_WALK_WHOLE;
		return PYD_OK;
	}
	enum pyd_err err = pyd_frame_push_iframe(s, out, c, off);
	if (err)
		return err;
	struct pyd_frame *f = &out->v[out->n - 1];
	if (L->iframe.is_entry != PYD_NO_FIELD)
		f->entry = buf[L->iframe.is_entry] != 0;
	*end = shims ? PYD_WALK_TORN
		     : f->generator ? PYD_WALK_DOUBT : PYD_WALK_WHOLE;
	return PYD_OK;
}

/*
 * The thread-state node: its frame pointer, and in the same read what
 * tells where the thread's stack starts: from 3.15 a pointer to the base
 * frame every chain of the thread ends at; before, from 3.12, the newest
 * chunk of its data stack, whose oldest chunk holds the thread's
 * outermost Python frame first.  Its fields' offsets from the frame
 * pointer, in *base and *chunk (0: not read).
 */
#define TSTATE_NODE_MAX 256

/* Where the first frame of data-stack chunk `chunk` is: the oldest chunk
 * (the thread's first) keeps data[0] for the interpreter, its frames
 * start at data[1]; later chunks at data[0]. */
static uint64_t chunk_first_frame(uint64_t chunk, bool oldest)
{
	return chunk + PYD_CHUNK_DATA + (oldest ? 8 : 0);
}

static size_t tstate_node_len(const struct py_layout *L, int32_t *base,
			      int32_t *chunk)
{
	int32_t from = L->tstate.frame;
	*base = *chunk = 0;
	if (L->tstate.base_frame > from)
		*base = L->tstate.base_frame - from;
	else if (L->datastack.chunk > from && L->owner_first_shim != PYD_NO_FIELD)
		*chunk = L->datastack.chunk - from;
	int32_t far = *base > *chunk ? *base : *chunk;
	if (far + 8 > TSTATE_NODE_MAX)
		far = *base = *chunk = 0;
	return (size_t)far + 8;
}

/*
 * Does a chain that ended at a shim start where the thread's stack does
 * (3.12-3.14)?  Its outermost Python frame is the first on the oldest
 * chunk of the thread's data stack, the chunks read from chunk (the
 * newest) on as nodes from index idx; a generator's frame lives in the
 * generator and C code may run one first, so that is only doubtful.
 */
static enum pyd_walk_end check_start(const struct pyd_node_reader *r,
				     size_t idx, uint64_t chunk,
				     const struct pyd_frame_buf *out)
{
	const struct pyd_frame *outer = &out->v[out->n - 1];
	enum pyd_err err;
	if (outer->generator)
		return PYD_WALK_DOUBT;
	/* Every chunk holds a frame at least: a stack of PYD_MAX_FRAMES
	 * frames has no more chunks. */
	for (size_t n = 0; chunk && n < PYD_MAX_FRAMES; n++) {
		const uint8_t *b = r->get(r->ctx, idx + n, chunk, 8, &err);
		if (!b)
			return PYD_WALK_TORN;
		uint64_t older = pyd_u64_at(b, 0);
		if (!older)
			return outer->addr == chunk_first_frame(chunk, true)
				       ? PYD_WALK_WHOLE
				       : PYD_WALK_TORN;
		chunk = older;
	}
	return PYD_WALK_TORN;
}

/*
 * A chain whose outermost Python frame is a generator's at frame: is the
 * thread running it (a generator C code ran as the thread's first frame)
 * or was the frame read after a yield?  Its link to the caller and its
 * state are read again as node idx, in one read: the frame object's
 * f_executing or f_state (<= 3.10), the generator's gi_frame_state just
 * before its embedded frame (3.11+).  A frame linked now to other than
 * what the walk found after it (nothing, or from 3.12 the shim the chain
 * ended at), or not running, was read mid-change.  One running unlinked
 * is only doubtful: it may be a thread's first, or be caught between a
 * resume and its link (3.11+ links it after it says it runs).
 */
static enum pyd_walk_end generator_end(struct pyd_session *s,
				       const struct pyd_node_reader *r,
				       size_t idx, uint64_t frame,
				       uint64_t after)
{
	const struct py_layout *L = &s->layout;
	bool objects = L->frame_model == PY_FRAMES_OBJECT;
	int32_t link = objects ? L->frame_object.f_back : L->iframe.previous;
	int32_t at = objects ? L->frame_object.f_running
			     : L->gen.gi_frame_state > 0 && L->gen.gi_iframe > 0
				       ? L->gen.gi_frame_state - L->gen.gi_iframe
				       : PYD_NO_FIELD;
	if (at == PYD_NO_FIELD)
		return PYD_WALK_DOUBT;
	int32_t from = at < link ? at : link;
	int32_t to = at + 1 > link + 8 ? at + 1 : link + 8;
	enum pyd_err err;
	const uint8_t *b = r->get(r->ctx, idx, frame + (uint64_t)(int64_t)from,
				  (size_t)(to - from), &err);
	if (!b)
		return PYD_WALK_DOUBT;
	int8_t state = (int8_t)b[at - from];
	bool running = L->frame_state.valid ? state == L->frame_state.executing
					    : state != 0;
	return pyd_u64_at(b, (size_t)(link - from)) != after || !running
		       ? PYD_WALK_TORN
		       : PYD_WALK_DOUBT;
}

enum pyd_err pyd_walk_thread(struct pyd_session *s, uint64_t tstate,
			     const struct pyd_node_reader *r,
			     struct pyd_frame_buf *out, bool last)
{
	const struct py_layout *L = &s->layout;
	enum pyd_err err = PYD_OK;
	int32_t base_at, chunk_at;
	size_t len = tstate_node_len(L, &base_at, &chunk_at);
	out->n = 0;
	out->end = PYD_WALK_WHOLE;
	const uint8_t *b = r->get(r->ctx, 0, tstate + (uint64_t)L->tstate.frame,
				  len, &err);
	/* A snapshot from an older release kept the frame pointer alone. */
	if (!b && len > 8) {
		base_at = chunk_at = 0;
		b = r->get(r->ctx, 0, tstate + (uint64_t)L->tstate.frame,
			   len = 8, &err);
	}
	if (!b)
		return err;
	uint64_t f = pyd_u64_at(b, 0);
	uint64_t base = base_at ? pyd_u64_at(b, (size_t)base_at) : 0;
	uint64_t chunk = chunk_at ? pyd_u64_at(b, (size_t)chunk_at) : 0;
	size_t idx = 1;
	if (L->frame_model == PY_FRAMES_CFRAME && f) {
		uint64_t cframe = f;
		b = r->get(r->ctx, idx++, f + (uint64_t)L->cframe.current_frame,
			   8, &err);
		if (!b)
			return err;
		f = pyd_u64_at(b, 0);
		/* A run of the evaluation loop points the thread at its own
		 * _PyCFrame a moment before it gives it its first frame:
		 * only the thread state's root one stands for no Python. */
		if (!f && cframe != tstate + (uint64_t)L->cframe.root) {
			out->end = PYD_WALK_TORN;
			return PYD_E_TORN;
		}
	}
	if ((err = pyd_walk_chain(s, f, idx, r, out)))
		return err;
	/* A shim ends the chain of every run of the loop, not only the
	 * thread's first: one read after its run returned, its link to the
	 * caller overwritten, looks like the thread's. */
	if (base && out->end_at)
		out->end = out->end_at == base ? PYD_WALK_WHOLE : PYD_WALK_TORN;
	else if (chunk && out->end_at && out->end == PYD_WALK_WHOLE && out->n)
		out->end = check_start(r, out->nodes, chunk, out);
	if (out->end == PYD_WALK_DOUBT && out->n && out->v[out->n - 1].generator) {
		uint64_t g = out->v[out->n - 1].addr;
		out->end = generator_end(s, r, out->nodes, g,
					 out->end_at == g ? 0 : out->end_at);
	}
	return out->end == PYD_WALK_TORN || (out->end == PYD_WALK_DOUBT && !last)
		       ? PYD_E_TORN
		       : PYD_OK;
}

/* The frame in buf's caller.  The code object it runs is read too, all
 * a walk's reads of it but the line: a dry run that follows the links
 * learns the code objects' reads with them, rather than leave each to a
 * read of its own after the batch.  The links do not depend on it: one
 * left to another run is no miss of this one. */
static uint64_t frame_link(struct pyd_session *s, const uint8_t *buf)
{
	const struct py_layout *L = &s->layout;
	size_t skipped = s->dry_skipped;
	int64_t off;
	if (L->frame_model == PY_FRAMES_OBJECT)
		pyd_code_get(s, pyd_u64_at(buf, L->frame_object.f_code));
	else if (!shim_frame(L, buf))
		frame_code(s, buf, &off);
	s->dry_skipped = skipped;
	return pyd_u64_at(buf, L->frame_model == PY_FRAMES_OBJECT
				       ? L->frame_object.f_back
				       : L->iframe.previous);
}

enum pyd_err pyd_walk_chain(struct pyd_session *s, uint64_t f, size_t idx,
			    const struct pyd_node_reader *r,
			    struct pyd_frame_buf *out)
{
	const struct py_layout *L = &s->layout;
	enum pyd_err err = PYD_OK;
	const uint8_t *b;
	size_t flen = pyd_frame_node_len(L);
	/* Brent's cycle check: a frame met again is a chain that loops
	 * (corrupt memory, or a live stack read mid-change). */
	uint64_t mark = 0, at = 0;
	size_t power = 1, steps = 0;
	enum pyd_walk_end end = PYD_WALK_WHOLE;
	out->loop_at = 0;
	out->more = false;
	out->end = PYD_WALK_WHOLE;
	out->end_at = 0;
	while (f && out->n < PYD_MAX_FRAMES) {
		if (f == mark) {
			out->loop_at = f;
			return PYD_E_TORN;
		}
		/* Shim frames push nothing: a long chain of them ends here
		 * too. */
		if (idx > 2 * (size_t)PYD_MAX_FRAMES)
			return PYD_E_TORN;
		if (++steps == power) {
			mark = f;
			power *= 2;
			steps = 0;
		}
		if (r->known && r->known(r->ctx, idx, f, out))
			return PYD_OK;
		if (!(b = r->get(r->ctx, idx++, f, flen, &err)))
			return err;
		if (r->links_only) {
			f = frame_link(s, b);
			continue;
		}
		size_t had = out->n;
		at = f;
		err = L->frame_model == PY_FRAMES_OBJECT
			      ? frame_object(s, b, out, &f, &end)
			      : interp_frame(s, b, out, &f, &end);
		if (err)
			return err;
		if (out->n > had)
			out->v[had].addr = at;
		/* 3.12+: the shim that ended the last frame's run lies in
		 * the C stack frame of the loop that ran it */
		else if (had && out->v[had - 1].entry &&
		         !out->v[had - 1].entry_at &&
		         L->owner_first_shim != PYD_NO_FIELD)
			out->v[had - 1].entry_at = at;
	}
	out->more = f != 0;
	out->nodes = idx;
	if (!f) {
		out->end = end;
		out->end_at = at;
	}
	return PYD_OK;
}

/* Nodes read one by one before the walk reads whole pages: an ordinary
 * stack costs (and a snapshot records) only its nodes' bytes, a deep one
 * a read per page of frames instead of one per frame. */
#define PLAIN_NODES 1024
#define DEEP_PAGES 64

/* The plain reader: every node read on its own, then through pages. */
struct plain_reader {
	struct pyd_session *s;
	const struct pyd_memsrc *src;
	struct pyd_pagecache cache; /* set up at node PLAIN_NODES */
	bool cached;
	uint8_t buf[256];
};

static const uint8_t *plain_get(void *ctx, size_t index, uint64_t addr,
				size_t len, enum pyd_err *err)
{
	struct plain_reader *p = ctx;
	if (len > sizeof p->buf) {
		*err = PYD_E_READ;
		return NULL;
	}
	if (index >= PLAIN_NODES && !p->cached)
		p->cached = pyd_pagecache_init(&p->cache, p->src, DEEP_PAGES);
	*err = pyd_read(p->cached ? &p->cache.layer.src : p->src, addr, p->buf,
			len);
	return *err ? NULL : p->buf;
}

static enum pyd_err walk_once(struct pyd_session *s,
			      const struct pyd_memsrc *src, uint64_t tstate,
			      struct pyd_frame_buf *out, bool last, bool links)
{
	struct plain_reader pr = {.s = s, .src = src};
	struct pyd_node_reader r = {plain_get, &pr, NULL, links};
	enum pyd_err err = pyd_walk_thread(s, tstate, &r, out, last);
	if (pr.cached)
		pyd_pagecache_free(&pr.cache);
	return err;
}

void pyd_walk_links(struct pyd_session *s, uint64_t tstate)
{
	struct pyd_frame_buf fb = {0};
	walk_once(s, s->src, tstate, &fb, false, true);
	free(fb.v);
}

enum pyd_err pyd_walk_from(struct pyd_session *s, uint64_t frame,
			   struct pyd_frame_buf *out)
{
	struct plain_reader pr = {.s = s, .src = s->src};
	struct pyd_node_reader r = {plain_get, &pr, NULL, false};
	out->n = 0;
	enum pyd_err err = pyd_walk_chain(s, frame, 0, &r, out);
	if (pr.cached)
		pyd_pagecache_free(&pr.cache);
	return err;
}

/*
 * Walk a thread's stack until a walk goes through: a frame freed mid-walk
 * shows up as a bad read, a generator left mid-walk as a chain that ends
 * too soon.  Each read of a link is the caller the frame had when read,
 * so a walk that goes through is the stack the thread had, even if its
 * top frame has changed since.  A walk read again reads from fresh: the
 * session's source may serve bytes read before the first walk.
 */
enum pyd_err pyd_walk_stable(struct pyd_session *s, uint64_t tstate,
			     const struct pyd_memsrc *fresh,
			     struct pyd_frame_buf *out, unsigned *retries)
{
	enum pyd_err err = PYD_OK;
	for (unsigned i = 0; i < PYD_WALK_ATTEMPTS; i++) {
		bool last = i + 1 == PYD_WALK_ATTEMPTS;
		err = walk_once(s, i ? fresh : s->src, tstate, out, last, false);
		if (!err || err == PYD_E_EXITED || err == PYD_E_NOMEM)
			return err;
		if (!last)
			(*retries)++;
	}
	/* A chain that loops on every read is no stack changing under us. */
	if (out->loop_at) {
		pyd_session_corrupt(s, "the frames of thread state 0x%llx "
				    "loop back to frame 0x%llx",
				    (unsigned long long)tstate,
				    (unsigned long long)out->loop_at);
		return PYD_E_READ;
	}
	return err ? err : PYD_E_TORN;
}

/*
 * Reading a stack back from the thread's data stack (3.12+), where a
 * core lost the C-stack frames that link one run of the evaluation loop
 * to the next (gcore writes the stacks of threads with guard pages as
 * zeros): the Python frames themselves are pushed one after another on
 * the data stack, in heap chunks the core has.  From the root chunk's
 * first frame (data[1]), each frame is co_framesize words long, up to
 * the thread's datastack_top; reaching the frame the walk stopped at
 * from there proves the frames outside it are all of them.
 */
#define MAX_CHUNKS 1024

/* The chunks of tstate's data stack, oldest first, into c[]; 0 if none
 * or not readable. */
static size_t data_chunks(struct pyd_session *s, uint64_t tstate,
			  uint64_t *c, uint64_t *top)
{
	const struct py_layout *L = &s->layout;
	uint64_t chunk;
	size_t n = 0;
	if (pyd_read_ptr(s, tstate + (uint64_t)L->datastack.chunk, &chunk) ||
	    pyd_read_ptr(s, tstate + (uint64_t)L->datastack.top, top))
		return 0;
	while (chunk && n < MAX_CHUNKS) {
		c[n++] = chunk;
		if (pyd_read_ptr(s, chunk, &chunk))
			return 0;
	}
	for (size_t i = 0; i < n / 2; i++) {
		uint64_t t = c[i];
		c[i] = c[n - 1 - i];
		c[n - 1 - i] = t;
	}
	return chunk ? 0 : n;
}

/* The frames on tstate's data stack, outermost first (malloc'd). */
static size_t data_frames(struct pyd_session *s, uint64_t tstate,
			  uint64_t **out)
{
	const struct py_layout *L = &s->layout;
	uint64_t chunks[MAX_CHUNKS], top, *v = NULL;
	size_t n = 0, cap = 0, nc = data_chunks(s, tstate, chunks, &top);
	for (size_t i = 0; i < nc; i++) {
		uint64_t hdr[3]; /* previous, size (bytes), top (words) */
		if (pyd_read(s->src, chunks[i], hdr, sizeof hdr))
			goto fail;
		uint64_t f = chunk_first_frame(chunks[i], i == 0);
		uint64_t end = i + 1 == nc ? top
					   : chunks[i] + PYD_CHUNK_DATA + hdr[2] * 8;
		if (end < f || end > chunks[i] + hdr[1])
			goto fail;
		while (f < end) {
			uint64_t code;
			const struct pyd_code *c;
			if (pyd_read_ptr(s, f + (uint64_t)L->iframe.code, &code) ||
			    !(c = pyd_code_get(s, code & ~L->code_tag_mask)) ||
			    c->framesize <= 0 || c->framesize > (1 << 20) ||
			    !pyd_grow((void **)&v, &cap, n + 1, sizeof *v))
				goto fail;
			v[n++] = f;
			f += (uint64_t)c->framesize * 8;
		}
		if (f != end)
			goto fail;
	}
	*out = v;
	return n;
fail:
	free(v);
	*out = NULL;
	return 0;
}

int64_t pyd_running_frames(struct pyd_session *s, uint64_t tstate)
{
	const struct py_layout *L = &s->layout;
	int32_t left, limit;
	if (L->datastack.depth_left == PYD_NO_FIELD ||
	    pyd_read_i32(s, tstate + (uint64_t)L->datastack.depth_left, &left) ||
	    pyd_read_i32(s, tstate + (uint64_t)L->datastack.depth_limit,
	                 &limit) ||
	    limit < left)
		return -1;
	return (int64_t)limit - left;
}

/*
 * The frames outside those in out, from the data stack; true if the stack
 * is whole now.  The walk read the innermost frames: the data-stack ones
 * among them are the top of the data stack, so every data-stack frame
 * below the outermost of them is outside them all -- also outside a
 * generator's frame the walk stopped at (generators' frames live in the
 * generators).  Whole means: the frames shown, with the trampolines on
 * the data stack, are as many as the recursion counter says are running
 * (a generator run from C among the missing ones would make one more);
 * without the counter, only when the walk stopped at a data-stack frame.
 */
bool pyd_recover_outer(struct pyd_session *s, uint64_t tstate,
		       struct pyd_frame_buf *out)
{
	const struct py_layout *L = &s->layout;
	uint64_t *v;
	if (L->datastack.chunk == PYD_NO_FIELD || L->frame_model == PY_FRAMES_OBJECT)
		return false;
	size_t n = data_frames(s, tstate, &v), k = n, walked = out->n;
	/* k: the outermost frame read that is on the data stack. */
	for (size_t j = out->n; k == n && j-- > 0;)
		for (size_t i = 0; i < n && k == n; i++)
			if (v[i] == out->v[j].addr)
				k = i;
	int64_t running = pyd_running_frames(s, tstate);
	bool stopped_on_stack = !out->n || (k < n && v[k] == out->v[out->n - 1].addr);
	bool ok = n > 0 && (running >= 0 || stopped_on_stack);
	uint8_t buf[256];
	size_t flen = pyd_frame_node_len(L), shims = 0;
	for (size_t i = n; ok && i-- > 0;) {
		uint64_t next;
		enum pyd_walk_end end;
		size_t had = out->n;
		ok = flen <= sizeof buf && !pyd_read(s->src, v[i], buf, flen);
		if (ok)
			shims += hidden_frame(s, buf);
		if (!ok || i >= k)
			continue; /* read by the walk already */
		ok = !interp_frame(s, buf, out, &next, &end);
		if (ok && out->n > had)
			out->v[had].addr = v[i];
	}
	free(v);
	ok = ok && (running < 0 || (uint64_t)running == out->n + shims);
	if (!ok)
		out->n = walked; /* what the walk read, and nothing claimed */
	return ok;
}

/* The bytes that tell who holds the GIL start at min(locked, holder). */
static int32_t gil_base(const struct py_layout *L)
{
	return L->gil.locked < L->gil.last_holder ? L->gil.locked
						  : L->gil.last_holder;
}

bool pyd_gil_probe(struct pyd_session *s, uint64_t interp, uint64_t *addr,
		   size_t *len)
{
	const struct py_layout *L = &s->layout;
	uint64_t gil = 0;
	*len = 8;
	switch (L->gil_model) {
	case PY_GIL_SYMBOL:
		*addr = s->rt.tstate_current_addr;
		return *addr != 0;
	case PY_GIL_RUNTIME_TSTATE:
		*addr = s->rt.runtime_addr + (uint64_t)L->runtime.tstate_current;
		return s->rt.runtime_addr != 0;
	case PY_GIL_INTERP_STATE:
		if (pyd_read_ptr(s, interp + (uint64_t)L->interp.gil_ptr, &gil) ||
		    !gil)
			return false;
		int32_t base = gil_base(L), end = L->gil.locked + 4;
		if (L->gil.last_holder + 8 > end)
			end = L->gil.last_holder + 8;
		*addr = gil + (uint64_t)base;
		*len = (size_t)(end - base);
		return true;
	case PY_GIL_NONE:
		return false;
	}
	return false;
}

uint64_t pyd_gil_struct(struct pyd_session *s, uint64_t interp)
{
	const struct py_layout *L = &s->layout;
	uint64_t gil = 0;
	switch (L->gil_model) {
	case PY_GIL_RUNTIME_TSTATE:
		return s->rt.runtime_addr && L->runtime.gil_struct > 0
			       ? s->rt.runtime_addr +
					 (uint64_t)L->runtime.gil_struct
			       : 0;
	case PY_GIL_INTERP_STATE:
		if (pyd_read_ptr(s, interp + (uint64_t)L->interp.gil_ptr, &gil))
			return 0;
		return gil;
	case PY_GIL_SYMBOL:
	case PY_GIL_NONE:
		break;
	}
	return 0;
}

uint64_t pyd_gil_decode(const struct pyd_session *s, const uint8_t *buf)
{
	const struct py_layout *L = &s->layout;
	if (L->gil_model != PY_GIL_INTERP_STATE)
		return pyd_u64_at(buf, 0);
	int32_t base = gil_base(L), locked;
	memcpy(&locked, buf + L->gil.locked - base, 4);
	return locked ? pyd_u64_at(buf, L->gil.last_holder - base) : 0;
}

int64_t pyd_thread_tid(struct pyd_session *s, uint64_t tstate)
{
	const struct py_layout *L = &s->layout;
	uint64_t v = 0;
	if (L->tstate.native_thread_id != PYD_NO_FIELD) {
		pyd_read_ptr(s, tstate + (uint64_t)L->tstate.native_thread_id, &v);
		return (int64_t)v;
	}
	int32_t tid = 0;
	if (pyd_read_ptr(s, tstate + (uint64_t)L->tstate.thread_id, &v) || !v ||
	    pyd_read_i32(s, v + s->arch->pthread_tid, &tid))
		return 0;
	return tid;
}
