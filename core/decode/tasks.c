/*
 * asyncio task graphs: 3.14+ here (this comment), 3.7 - 3.13 in
 * tasks_legacy.c; the graph building (edges, cycles) both share is here.
 *
 * Where tasks are: since 3.14 every C Task (asyncio.Task and its
 * subclasses) links itself, while pending, into a list headed in the
 * thread state of the thread that created it (_PyThreadStateImpl.
 * asyncio_tasks_head); when a thread exits its list is moved to the
 * interpreter's (PyInterpreterState.asyncio_tasks_head).  The thread state
 * also names the task running right now (asyncio_running_task).  Where
 * those members are, and the Task's name, coroutine, awaited-by and list
 * node, the _asyncio module publishes in its .AsyncioDebug section
 * (tasks.h); where generators keep their frame and frame state, and how
 * sets and ints look, _Py_DebugOffsets does (struct py_layout).
 *
 * Pure-Python tasks (asyncio.tasks._PyTask) link into no list: they are
 * in the asyncio.tasks module's sets as before 3.14, read by tasks_legacy.c
 * into the same listing (tasks_list_py); their coroutine stacks are
 * walked here like any other.  CPython records awaited-by only between C
 * tasks, so the edges a pure-Python task is on are derived from waiters
 * as before 3.14 (tasks_py_edges).
 *
 * A task's coroutine stack: the coroutine's frame is embedded in the
 * coroutine object (gi_iframe).  While suspended in `await`, the awaited
 * object sits on the frame's value stack (stackpointer[-awaited_slot]);
 * if that is itself a coroutine or generator (or an async generator's
 * asend/athrow awaitable, which leads to the async generator), follow it
 * down.  A running task's stack is its thread's stack down to its
 * coroutine's frame.
 *
 * Who awaits whom: a task's awaited_by is NULL, one task, or a set of
 * tasks (awaited_by_is_set); the awaits edges are the same edges turned
 * around.  Await cycles are found and reported, never followed forever.
 *
 * Every pointer comes from the target (live, core or snapshot) and may be
 * stale or garbage: every read is checked, every loop bounded, a list that
 * changes under us is read again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "session.h"
#include "asyncio_find.h"
#include "tasks.h"
#include "unicode.h"

/* ---- .AsyncioDebug --------------------------------------------------- */

static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
	return off < size && width <= size - off;
}

int pyd_asyncio_offsets_parse(const uint8_t *raw, size_t len,
			      struct pyd_asyncio_offsets *out)
{
	if (!raw || !out || len < PYD_ASYNCIO_OFFSETS_SIZE)
		return -1;
	struct pyd_asyncio_offsets o = {
		.task_size = pyd_u64_at(raw, 0),
		.task_name = pyd_u64_at(raw, 8),
		.task_awaited_by = pyd_u64_at(raw, 16),
		.task_is_task = pyd_u64_at(raw, 24),
		.task_awaited_by_is_set = pyd_u64_at(raw, 32),
		.task_coro = pyd_u64_at(raw, 40),
		.task_node = pyd_u64_at(raw, 48),
		.interp_size = pyd_u64_at(raw, 56),
		.interp_tasks_head = pyd_u64_at(raw, 64),
		.tstate_size = pyd_u64_at(raw, 72),
		.tstate_running_loop = pyd_u64_at(raw, 80),
		.tstate_running_task = pyd_u64_at(raw, 88),
		.tstate_tasks_head = pyd_u64_at(raw, 96),
	};
	uint64_t ts = o.task_size;
	/* Members of a Task lie past its PyObject header. */
	const uint64_t ptrs[] = { o.task_name, o.task_awaited_by, o.task_coro };
	if (ts < 32 || ts > MAX_TASK_SIZE)
		return -1;
	for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++)
		if (ptrs[i] < 16 || !fits(ptrs[i], 8, ts))
			return -1;
	if (o.task_node < 16 || !fits(o.task_node, 16, ts) ||
	    o.task_is_task < 16 || !fits(o.task_is_task, 1, ts) ||
	    o.task_awaited_by_is_set < 16 ||
	    !fits(o.task_awaited_by_is_set, 1, ts) ||
	    o.task_is_task == o.task_awaited_by_is_set ||
	    o.task_name == o.task_coro || o.task_name == o.task_awaited_by ||
	    o.task_coro == o.task_awaited_by)
		return -1;
	/* Offset 0 of both states is their list link (next / prev), so no
	 * asyncio member can be there. */
	if (!o.interp_tasks_head || !o.tstate_running_loop ||
	    !o.tstate_running_task || !o.tstate_tasks_head)
		return -1;
	if (o.interp_size == 0 || o.interp_size > MAX_INTERP_SIZE ||
	    !fits(o.interp_tasks_head, 16, o.interp_size))
		return -1;
	if (o.tstate_size == 0 || o.tstate_size > MAX_TSTATE_SIZE ||
	    !fits(o.tstate_running_loop, 8, o.tstate_size) ||
	    !fits(o.tstate_running_task, 8, o.tstate_size) ||
	    !fits(o.tstate_tasks_head, 16, o.tstate_size))
		return -1;
	o.task_state = o.task_is_task == o.task_awaited_by + 12
			       ? (int64_t)o.task_awaited_by + 8
			       : -1;
	*out = o;
	return 0;
}

/* ---- id set ---------------------------------------------------------- */

size_t tasks_hslot(const struct tctx *c, uint64_t id)
{
	size_t mask = c->hcap - 1;
	size_t i = (size_t)((id >> 3) * 0x9E3779B97F4A7C15ULL) & mask;
	while (c->hkeys[i] && c->hkeys[i] != id)
		i = (i + 1) & mask;
	return i;
}

/* Index of the task with this id, or -1. */
long tasks_find_task(const struct tctx *c, uint64_t id)
{
	if (!c->hcap || !id)
		return -1;
	size_t i = tasks_hslot(c, id);
	return c->hkeys[i] ? (long)c->hvals[i] : -1;
}

bool tasks_hgrow(struct tctx *c)
{
	size_t cap = c->hcap ? c->hcap * 2 : 1024;
	uint64_t *keys = calloc(cap, sizeof *keys);
	uint32_t *vals = calloc(cap, sizeof *vals);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return false;
	}
	uint64_t *ok = c->hkeys;
	uint32_t *ov = c->hvals;
	size_t ocap = c->hcap;
	c->hkeys = keys;
	c->hvals = vals;
	c->hcap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (ok[i]) {
			size_t j = tasks_hslot(c, ok[i]);
			c->hkeys[j] = ok[i];
			c->hvals[j] = ov[i];
		}
	free(ok);
	free(ov);
	return true;
}

/* ---- small readers --------------------------------------------------- */

enum pyd_err tasks_rd(struct tctx *c, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return PYD_E_READ;
	return pyd_read(c->s->src, addr, buf, len);
}

/* A C string of the target (a type's tp_name), read a page at a time so
 * that a short string at the end of a mapping still reads. */
static bool read_cstr(struct tctx *c, uint64_t addr, char *out, size_t outsz)
{
	size_t n = 0;
	while (n + 1 < outsz) {
		size_t room = 4096 - (size_t)((addr + n) & 4095);
		size_t want = outsz - 1 - n < room ? outsz - 1 - n : room;
		if (tasks_rd(c, addr + n, out + n, want))
			return false;
		void *nul = memchr(out + n, 0, want);
		n += want;
		if (nul)
			return true;
	}
	out[outsz - 1] = 0;
	return true;
}

/* What kind of object a type makes, and its tp_flags; cached. */
static const struct type_entry *type_info(struct tctx *c, uint64_t type)
{
	static const struct type_entry unknown = {0, 0, KIND_OTHER};
	const struct py_layout *L = c->L;
	if (!type)
		return &unknown;
	size_t i = (size_t)((type >> 3) * 0x9E3779B97F4A7C15ULL) % TYPE_CACHE;
	for (size_t probe = 0; probe < TYPE_CACHE; probe++) {
		struct type_entry *e = &c->types[(i + probe) % TYPE_CACHE];
		if (e->addr == type)
			return e;
		if (!e->addr)
			break;
	}
	uint8_t buf[512];
	size_t need = (size_t)L->object.tp_flags + 8;
	if (need < (size_t)L->object.tp_name + 24)
		need = (size_t)L->object.tp_name + 24;
	if (need > sizeof buf || tasks_rd(c, type, buf, need))
		return &unknown;
	struct type_entry t = {type, pyd_u64_at(buf, (uint64_t)L->object.tp_flags),
			       KIND_OTHER};
	/* Generators, coroutines and async generators end in their frame:
	 * tp_basicsize is offsetof(gi_iframe.localsplus), one PyObject *
	 * per item.  Their names live in .rodata, which a core without its
	 * binaries lacks: then the shape alone decides. */
	uint64_t basic = pyd_u64_at(buf, (uint64_t)L->object.tp_name + 8);
	uint64_t item = pyd_u64_at(buf, (uint64_t)L->object.tp_name + 16);
	bool gen_shape = basic == (uint64_t)(L->gen.gi_iframe +
					     L->iframe.localsplus) &&
			 item == 8;
	char name[MAX_TYPE_NAME + 1];
	if (!read_cstr(c, pyd_u64_at(buf, (uint64_t)L->object.tp_name), name,
		       sizeof name))
		t.kind = gen_shape ? KIND_GEN : KIND_OTHER;
	else if (strcmp(name, "async_generator_asend") == 0 ||
		 strcmp(name, "async_generator_athrow") == 0)
		t.kind = KIND_AWAITER;
	else if (gen_shape && (strcmp(name, "coroutine") == 0 ||
			       strcmp(name, "generator") == 0 ||
			       strcmp(name, "async_generator") == 0))
		t.kind = KIND_GEN;
	/* Keep the table at most half full, so probes stay short; past
	 * that the answer is only good until the next call. */
	if (c->ntypes < TYPE_CACHE / 2)
		for (size_t probe = 0; probe < TYPE_CACHE; probe++) {
			struct type_entry *e =
				&c->types[(i + probe) % TYPE_CACHE];
			if (!e->addr) {
				*e = t;
				c->ntypes++;
				return e;
			}
		}
	c->scratch = t;
	return &c->scratch;
}

/* Read an object of the target: as much as `want` bytes if they are
 * mapped, else at least `need`; returns how many, 0 on failure. */
static size_t read_obj(struct tctx *c, uint64_t addr, uint8_t *buf,
		       size_t want, size_t need)
{
	if (!tasks_rd(c, addr, buf, want))
		return want;
	return need < want && !tasks_rd(c, addr, buf, need) ? need : 0;
}

/* ---- listing --------------------------------------------------------- */

static bool is_task_type(const struct tctx *c, uint64_t type)
{
	for (size_t i = 0; i < c->ntask_types; i++)
		if (c->task_types[i] == type)
			return true;
	return false;
}

/* Record the task whose TaskObj is in obj.  PYD_E_TORN if it is listed
 * already (a list that changed while we walked it). */
static enum pyd_err add_raw(struct tctx *c, uint64_t id, const uint8_t *obj,
			    const struct thread_info *t)
{
	const struct pyd_asyncio_offsets *o = &c->ao;
	if (tasks_find_task(c, id) >= 0)
		return PYD_E_TORN;
	if (c->nraw >= PYD_MAX_TASKS) {
		c->capped = true; /* list no more */
		return PYD_OK;
	}
	if (c->nraw == c->rawcap) {
		size_t cap = c->rawcap ? c->rawcap * 2 : 256;
		void *p = realloc(c->raw, cap * sizeof *c->raw);
		if (!p)
			return PYD_E_NOMEM;
		c->raw = p;
		c->rawcap = cap;
	}
	if ((c->nraw + 1) * 2 > c->hcap && !tasks_hgrow(c))
		return PYD_E_NOMEM;
	struct raw_task *r = &c->raw[c->nraw];
	*r = (struct raw_task){
		.id = id,
		.type = pyd_u64_at(obj, (uint64_t)c->L->object.ob_type),
		.name = pyd_u64_at(obj, o->task_name),
		.awaited_by = pyd_u64_at(obj, o->task_awaited_by),
		.coro = pyd_u64_at(obj, o->task_coro),
		.awaited_by_is_set = obj[o->task_awaited_by_is_set] != 0,
		.state = -1,
		.tid = t ? t->tid : 0,
		.tstate = t ? t->tstate : 0,
	};
	if (o->task_state >= 0) {
		int32_t st;
		memcpy(&st, obj + o->task_state, sizeof st);
		r->state = st;
	}
	/* What the task waits on (not published; from the built-in table),
	 * for the edges a pure-Python task is on. */
	const struct py_old_tasks *ot = &c->L->old_tasks;
	if (py_layout_has_py_tasks(c->L) && ot->task_fut_waiter >= 16 &&
	    (uint64_t)ot->task_fut_waiter + 8 <= o->task_size)
		r->waiter = pyd_u64_at(obj, (uint64_t)ot->task_fut_waiter);
	size_t slot = tasks_hslot(c, id);
	c->hkeys[slot] = id;
	c->hvals[slot] = (uint32_t)c->nraw++;
	if (!is_task_type(c, r->type) &&
	    c->ntask_types < sizeof c->task_types / sizeof *c->task_types)
		c->task_types[c->ntask_types++] = r->type;
	return PYD_OK;
}

/* Walk one circular list of tasks (the head is a struct llist_node in a
 * thread or interpreter state). */
static enum pyd_err walk_list(struct tctx *c, uint64_t head,
			      const struct thread_info *t)
{
	const struct pyd_asyncio_offsets *o = &c->ao;
	uint8_t obj[MAX_TASK_SIZE];
	uint64_t next;
	enum pyd_err err = tasks_rd(c, head + (uint64_t)c->L->llist.next, &next,
			      sizeof next);
	for (size_t n = 0; !err && next != head && !c->capped; n++) {
		if (!next || n >= PYD_MAX_TASKS)
			return PYD_E_TORN;
		uint64_t id = next - o->task_node;
		if ((err = tasks_rd(c, id, obj, o->task_size)))
			break;
		/* Only a Task links itself into these lists. */
		if (!obj[o->task_is_task])
			return PYD_E_TORN;
		if ((err = add_raw(c, id, obj, t)))
			break;
		next = pyd_u64_at(obj, o->task_node + (uint64_t)c->L->llist.next);
	}
	return err;
}

enum pyd_err tasks_add_thread(struct tctx *c, uint64_t tstate, int64_t tid,
			       uint64_t running)
{
	if (c->nthreads == c->threadcap) {
		size_t cap = c->threadcap ? c->threadcap * 2 : 16;
		void *p = realloc(c->threads, cap * sizeof *c->threads);
		if (!p)
			return PYD_E_NOMEM;
		c->threads = p;
		c->threadcap = cap;
	}
	c->threads[c->nthreads++] = (struct thread_info){
		.tstate = tstate, .tid = tid, .running_task = running};
	return PYD_OK;
}

/* The thread states of one interpreter, oldest first (CPython pushes new
 * ones at the head). */
static enum pyd_err list_threads(struct tctx *c, uint64_t interp)
{
	const struct py_layout *L = c->L;
	const struct pyd_asyncio_offsets *o = &c->ao;
	size_t first = c->nthreads;
	uint64_t ts;
	enum pyd_err err = tasks_rd(c, interp + (uint64_t)L->interp.tstate_head, &ts,
			      sizeof ts);
	for (size_t n = 0; !err && ts && n < MAX_THREADS; n++) {
		uint64_t next = 0, tid = 0, loop = 0, running = 0;
		if ((err = tasks_rd(c, ts + (uint64_t)L->tstate.next, &next, 8)) ||
		    (err = tasks_rd(c, ts + (uint64_t)L->tstate.native_thread_id,
			      &tid, 8)) ||
		    (err = tasks_rd(c, ts + o->tstate_running_loop, &loop, 8)) ||
		    (err = tasks_rd(c, ts + o->tstate_running_task, &running, 8)))
			break;
		if ((err = tasks_add_thread(c, ts, (int64_t)tid, loop ? running : 0)))
			break;
		/* What a pure-Python task's loop._thread_id holds. */
		if (py_layout_has_py_tasks(L) &&
		    (err = tasks_rd(c, ts + (uint64_t)L->tstate.thread_id,
				    &c->threads[c->nthreads - 1].pthread, 8)))
			break;
		ts = next;
	}
	for (size_t i = first, j = c->nthreads; i + 1 < j; i++, j--) {
		struct thread_info tmp = c->threads[i];
		c->threads[i] = c->threads[j - 1];
		c->threads[j - 1] = tmp;
	}
	return err;
}

/*
 * Start a listing pass: forget what the previous pass collected and list
 * the interpreters into interps, newest first as CPython chains them (so
 * callers walk it backwards to put the main interpreter first).
 */
enum pyd_err tasks_begin_pass(struct tctx *c, uint64_t *interps,
			       size_t *ninterps)
{
	const struct py_layout *L = c->L;
	c->nraw = 0;
	c->nthreads = 0;
	c->capped = false;
	c->npytask_types = 0;
	if (c->hcap)
		memset(c->hkeys, 0, c->hcap * sizeof *c->hkeys);
	*ninterps = 0;
	uint64_t interp;
	enum pyd_err err = tasks_rd(c, c->s->rt.runtime_addr +
				       (uint64_t)L->runtime.interpreters_head,
			      &interp, sizeof interp);
	while (!err && interp && *ninterps < MAX_INTERPS) {
		interps[(*ninterps)++] = interp;
		err = tasks_rd(c, interp + (uint64_t)L->interp.next, &interp,
			 sizeof interp);
	}
	return err;
}

/* Every task list of every interpreter, once: the main interpreter
 * (the oldest; CPython pushes new ones at the head) first. */
static enum pyd_err list_once(struct tctx *c, uint64_t *interps,
			      struct pyd_task_graph *g)
{
	size_t ninterps;
	enum pyd_err err = tasks_begin_pass(c, interps, &ninterps);
	for (size_t n = ninterps; !err && n-- > 0;) {
		size_t first = c->nthreads;
		if ((err = list_threads(c, interps[n])))
			break;
		for (size_t i = first; !err && i < c->nthreads; i++)
			err = walk_list(c, c->threads[i].tstate + c->ao.tstate_tasks_head,
					&c->threads[i]);
		if (!err)
			err = walk_list(c, interps[n] + c->ao.interp_tasks_head,
					NULL);
		/* Pure-Python tasks (asyncio.tasks._PyTask) link into no
		 * list: they are in the module's sets as before 3.14.  After
		 * the lists, so a C task any set holds is listed once. */
		if (!err && py_layout_has_py_tasks(c->L))
			err = tasks_list_py(c, interps[n], g);
	}
	return err;
}

/* List until a pass goes through: a live target's lists (and threads)
 * change while we walk them, which shows as a bad read, a NULL link or a
 * task met twice. */
static enum pyd_err list_tasks(struct tctx *c, struct pyd_task_graph *g)
{
	enum pyd_err err = PYD_OK;
	uint64_t *interps = malloc(MAX_INTERPS * sizeof *interps);
	if (!interps)
		return PYD_E_NOMEM;
	for (unsigned i = 0; i <= MAX_LIST_RETRIES; i++) {
		err = list_once(c, interps, g);
		if (err != PYD_E_TORN && err != PYD_E_READ)
			break;
		if (i < MAX_LIST_RETRIES)
			g->retries++;
	}
	free(interps);
	return err;
}

/* ---- names ----------------------------------------------------------- */

/* A short compact ASCII str that is all in buf (one read instead of
 * pyd_read_str's two: names are read once per task); NULL if it is not. */
static char *short_ascii(const struct py_layout *L, const uint8_t *buf,
			 size_t got)
{
	uint32_t state;
	if ((size_t)L->unicode.ascii_size > got ||
	    (size_t)L->unicode.state + 4 > got)
		return NULL;
	memcpy(&state, buf + L->unicode.state, sizeof state);
	struct pyd_str_state st = pyd_str_state_decode(state);
	int64_t len = (int64_t)pyd_u64_at(buf, (uint64_t)L->unicode.length);
	if (!st.compact || !st.ascii || st.kind != 1 || len < 0 ||
	    (uint64_t)len > got - (size_t)L->unicode.ascii_size)
		return NULL;
	char *out = malloc((size_t)len + 1);
	if (!out)
		return NULL;
	memcpy(out, buf + L->unicode.ascii_size, (size_t)len);
	out[len] = 0;
	/* ASCII means < 0x80, but the bytes are the target's: check. */
	for (int64_t i = 0; i < len; i++)
		if ((unsigned char)out[i] >= 0x80 || !out[i]) {
			free(out);
			return NULL;
		}
	return out;
}

/* A task's name: a str, or (3.13+) the int of its "Task-N" name until
 * get_name() made it a str. */
static char *task_name(struct tctx *c, uint64_t obj)
{
	const struct py_layout *L = c->L;
	uint8_t buf[NAME_READ];
	size_t need = (size_t)L->pylong.ob_digit + 4 * MAX_NAME_DIGITS;
	if (need > sizeof buf)
		return NULL;
	size_t got = read_obj(c, obj, buf, sizeof buf, need);
	if (!got)
		got = read_obj(c, obj, buf, (size_t)L->object.ob_type + 8,
			       (size_t)L->object.ob_type + 8);
	if (!got)
		return NULL;
	const struct type_entry *t =
		type_info(c, pyd_u64_at(buf, (uint64_t)L->object.ob_type));
	if (t->flags & TPFLAGS_UNICODE_SUBCLASS) {
		char *s = short_ascii(L, buf, got);
		return s ? s : pyd_read_str(c->s, obj);
	}
	if (!(t->flags & TPFLAGS_LONG_SUBCLASS) || got < need)
		return NULL;
	/* 3.12+ compact int: lv_tag = ndigits << 3 | sign (0 positive,
	 * 1 zero, 2 negative); 30-bit digits. */
	uint64_t tag = pyd_u64_at(buf, (uint64_t)L->pylong.lv_tag);
	uint64_t ndigits = tag >> 3, v = 0;
	if (ndigits > MAX_NAME_DIGITS || (tag & 3) == 3)
		return NULL;
	for (uint64_t i = ndigits; i-- > 0;) {
		uint32_t d;
		memcpy(&d, buf + L->pylong.ob_digit + 4 * i, sizeof d);
		v = (v << 30) | (d & 0x3fffffff);
	}
	char *out = malloc(32);
	if (out)
		snprintf(out, 32, "Task-%s%llu", (tag & 3) == 2 ? "-" : "",
			 (unsigned long long)v);
	return out;
}

/* ---- coroutine stacks ------------------------------------------------ */

static bool push_frame(struct pyd_frame_buf *b, struct tctx *c, uint64_t code,
		       uint64_t instr)
{
	return pyd_frame_push_at(c->s, b, code,
				 pyd_iframe_offset(c->L, code, instr)) == PYD_OK;
}

/*
 * From the task's coroutine down to what it awaits, outermost first:
 * each suspended coroutine / generator / async generator frame, as long
 * as the awaited object is one of those.
 */
static enum pyd_err coro_chain(struct tctx *c, uint64_t coro,
			       struct pyd_frame_buf *out)
{
	const struct py_layout *L = c->L;
	const uint64_t tag = L->code_tag_mask;
	const size_t head = (size_t)(L->gen.gi_iframe + L->iframe.localsplus);
	uint8_t obj[GEN_READ];
	if (head > sizeof obj)
		return PYD_E_READ;
	for (size_t depth = 0; coro; depth++) {
		if (depth >= MAX_CORO_DEPTH)
			return PYD_E_READ;
		/* A small object at the end of a mapping: read what fits. */
		size_t got = read_obj(c, coro, obj, sizeof obj, head);
		if (!got)
			got = read_obj(c, coro, obj, (size_t)L->object.ob_type + 16,
				       (size_t)L->object.ob_type + 8);
		if (!got)
			return PYD_E_READ;
		const struct type_entry *t =
			type_info(c, pyd_u64_at(obj, (uint64_t)L->object.ob_type));
		if (t->kind == KIND_AWAITER) {
			/* PyAsyncGenASend / AThrow: the async generator is
			 * the first member after the object header. */
			uint64_t hdr = (uint64_t)L->object.ob_type + 8;
			if (got < hdr + 8)
				return PYD_E_READ;
			coro = pyd_u64_at(obj, hdr);
			continue;
		}
		if (t->kind != KIND_GEN)
			return PYD_OK; /* a Future, a plain iterator, ... */
		if (got < head)
			return PYD_E_READ;
		int8_t state = (int8_t)obj[L->gen.gi_frame_state];
		if (state < L->frame_state.created ||
		    state > L->frame_state.executing)
			return PYD_OK; /* finished: no frame */
		const uint8_t *f = obj + L->gen.gi_iframe;
		if (f[L->iframe.owner] != FRAME_OWNED_BY_GENERATOR)
			return PYD_E_READ;
		uint64_t code = pyd_u64_at(f, (uint64_t)L->iframe.code) & ~tag;
		if (!push_frame(out, c, code, pyd_u64_at(f, (uint64_t)L->iframe.instr)))
			return PYD_E_READ;
		/* Running (its frames are on some thread's stack), suspended
		 * at a plain yield, or not started: it awaits nothing. */
		if (state < L->frame_state.yield_from ||
		    state >= L->frame_state.executing)
			return PYD_OK;
		uint64_t sp = pyd_u64_at(f, (uint64_t)L->iframe.stackpointer);
		uint64_t base = coro + head;
		uint64_t at = sp - 8 * (uint64_t)L->awaited_slot;
		if (sp < base + 8 * (uint64_t)L->awaited_slot || sp - base > (1u << 24))
			return PYD_E_READ;
		uint64_t ref;
		if (at + 8 <= coro + got)
			ref = pyd_u64_at(obj, at - coro);
		else if (tasks_rd(c, at, &ref, sizeof ref))
			return PYD_E_READ;
		coro = ref & ~tag;
	}
	return PYD_OK;
}

/*
 * A running task: its thread's stack, innermost first, down to the frame
 * of the task's coroutine.  *found is false if that frame is not on the
 * stack (the task stopped running while we read).
 */
static enum pyd_err running_stack(struct tctx *c, uint64_t tstate,
				  uint64_t coro, struct pyd_frame_buf *out,
				  bool *found)
{
	const struct py_layout *L = c->L;
	uint64_t target = coro + (uint64_t)L->gen.gi_iframe, f;
	uint8_t buf[256];
	size_t need = (size_t)L->iframe.localsplus;
	*found = false;
	if (need > sizeof buf)
		return PYD_E_READ;
	enum pyd_err err = tasks_rd(c, tstate + (uint64_t)L->tstate.frame, &f, sizeof f);
	for (size_t steps = 0; !err && f && steps < PYD_MAX_FRAMES; steps++) {
		if ((err = tasks_rd(c, f, buf, need)))
			break;
		uint64_t prev = pyd_u64_at(buf, (uint64_t)L->iframe.previous);
		int owner = buf[L->iframe.owner];
		bool shim = L->owner_first_shim != PYD_NO_FIELD &&
			    owner >= L->owner_first_shim;
		if (!shim &&
		    !push_frame(out, c,
				pyd_u64_at(buf, (uint64_t)L->iframe.code) & ~L->code_tag_mask,
				pyd_u64_at(buf, (uint64_t)L->iframe.instr)))
			return PYD_E_READ;
		if (f == target) {
			*found = true;
			return PYD_OK;
		}
		f = prev;
	}
	out->n = 0;
	return err;
}

void tasks_reverse_frames(struct pyd_frame *f, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		struct pyd_frame tmp = f[i];
		f[i] = f[n - 1 - i];
		f[n - 1 - i] = tmp;
	}
}

/* ---- awaited-by ------------------------------------------------------ */

struct id_list {
	uint64_t *v;
	size_t n, cap;
};

static bool id_push(struct id_list *l, uint64_t id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		void *p = realloc(l->v, cap * sizeof *l->v);
		if (!p)
			return false;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = id;
	return true;
}

/* The objects in a task's awaited_by: one, or the keys of a set. */
static enum pyd_err read_awaiters(struct tctx *c, const struct raw_task *r,
				  struct id_list *out)
{
	const struct py_layout *L = c->L;
	out->n = 0;
	if (!r->awaited_by)
		return PYD_OK;
	if (!r->awaited_by_is_set)
		return id_push(out, r->awaited_by) ? PYD_OK : PYD_E_NOMEM;
	int32_t hi = L->set.used;
	if (L->set.mask > hi)
		hi = L->set.mask;
	if (L->set.table > hi)
		hi = L->set.table;
	uint8_t hdr[256];
	if ((size_t)hi + 8 > sizeof hdr)
		return PYD_E_READ;
	enum pyd_err err = tasks_rd(c, r->awaited_by, hdr, (size_t)hi + 8);
	if (err)
		return err;
	int64_t used = (int64_t)pyd_u64_at(hdr, (uint64_t)L->set.used);
	int64_t mask = (int64_t)pyd_u64_at(hdr, (uint64_t)L->set.mask);
	uint64_t table = pyd_u64_at(hdr, (uint64_t)L->set.table);
	if (mask < 0 || (uint64_t)mask + 1 > MAX_SET_SLOTS ||
	    ((uint64_t)mask & ((uint64_t)mask + 1)) != 0 || used < 0 ||
	    used > mask + 1)
		return PYD_E_READ;
	size_t slots = (size_t)mask + 1;
	uint8_t *t = malloc(slots * 16);
	if (!t)
		return PYD_E_NOMEM;
	if ((err = tasks_rd(c, table, t, slots * 16))) {
		free(t);
		return err;
	}
	/* setentry {key, hash}: NULL key is free, hash -1 a deleted entry
	 * (no live object hashes to -1). */
	for (size_t i = 0; i < slots && out->n < (size_t)used; i++) {
		uint64_t key = pyd_u64_at(t, i * 16);
		int64_t hash = (int64_t)pyd_u64_at(t, i * 16 + 8);
		if (key && hash != -1 && !id_push(out, key)) {
			free(t);
			return PYD_E_NOMEM;
		}
	}
	free(t);
	return PYD_OK;
}

/* Index of the task `id` awaited by another: listed, or a task (an object
 * of a type we saw listed) that no list holds (finished, or created by a
 * thread state we could not walk): add it.  -1 if it is no task. */
static long awaiter_index(struct tctx *c, uint64_t id, enum pyd_err *err)
{
	long i = tasks_find_task(c, id);
	if (i >= 0 || !id)
		return i;
	uint8_t obj[MAX_TASK_SIZE];
	const struct pyd_asyncio_offsets *o = &c->ao;
	if (tasks_rd(c, id, obj, o->task_size) ||
	    !is_task_type(c, pyd_u64_at(obj, (uint64_t)c->L->object.ob_type)) ||
	    !obj[o->task_is_task])
		return -1;
	enum pyd_err e = add_raw(c, id, obj, NULL);
	if (e) {
		if (e != PYD_E_TORN)
			*err = e;
		return -1;
	}
	return (long)c->nraw - 1;
}

/* ---- decoding one task ----------------------------------------------- */

static const struct thread_info *thread_of(const struct tctx *c,
					   uint64_t tstate)
{
	for (size_t i = 0; tstate && i < c->nthreads; i++)
		if (c->threads[i].tstate == tstate)
			return &c->threads[i];
	return NULL;
}

enum pyd_task_state tasks_task_state(int32_t st)
{
	switch (st) {
	case FUT_PENDING:
		return PYD_TASK_PENDING;
	case FUT_CANCELLED:
		return PYD_TASK_CANCELLED;
	case FUT_FINISHED:
		return PYD_TASK_DONE;
	}
	return PYD_TASK_UNKNOWN;
}

static enum pyd_err decode_task(struct tctx *c, size_t i, struct pyd_task *t,
				unsigned *retries)
{
	const struct raw_task *r = &c->raw[i];
	const struct thread_info *th = thread_of(c, r->tstate);
	memset(t, 0, sizeof *t);
	t->id = r->id;
	t->thread = r->tid;
	t->state = tasks_task_state(r->state);
	/* A pure-Python task runs as asyncio.tasks._current_tasks says; the
	 * thread state names C tasks only. */
	t->running = r->py ? r->running && th : th && th->running_task == r->id;
	char *name = task_name(c, r->name);
	if (!name) {
		name = malloc(32);
		if (!name)
			return PYD_E_NOMEM;
		snprintf(name, 32, "<task 0x%llx>", (unsigned long long)r->id);
	}
	t->name = name;
	struct pyd_frame_buf fb = {0};
	bool found = false;
	uint64_t coro = r->coro;
	if (t->running)
		t->error = running_stack(c, th->tstate, coro, &fb, &found);
	for (unsigned retry = 0; !found; retry++) {
		/* Outermost first: turn it around. */
		fb.n = 0;
		t->error = coro ? coro_chain(c, coro, &fb) : PYD_OK;
		tasks_reverse_frames(fb.v, fb.n);
		if (t->error != PYD_E_READ || retry >= MAX_TASK_RETRIES)
			break;
		/* A live task may have moved on (or finished) while we read:
		 * look again.  A finished one has no stack to show. */
		if (r->py) {
			uint64_t state;
			(*retries)++;
			if (pyd_obj_attr(c->s, r->id, "_coro", &coro) ||
			    pyd_obj_attr(c->s, r->id, "_state", &state))
				break;
			if (state && !pyd_str_eq(c->s, state, "PENDING")) {
				t->state = pyd_str_eq(c->s, state, "CANCELLED")
						   ? PYD_TASK_CANCELLED
						   : PYD_TASK_DONE;
				fb.n = 0;
				t->error = PYD_OK;
				break;
			}
			continue;
		}
		uint8_t obj[MAX_TASK_SIZE];
		if (tasks_rd(c, r->id, obj, c->ao.task_size))
			break;
		(*retries)++;
		coro = pyd_u64_at(obj, c->ao.task_coro);
		if (c->ao.task_state >= 0) {
			int32_t st;
			memcpy(&st, obj + c->ao.task_state, sizeof st);
			t->state = tasks_task_state(st);
			if (st != FUT_PENDING) {
				fb.n = 0;
				t->error = PYD_OK;
				break;
			}
		}
	}
	t->coro_stack = fb.v;
	t->ncoro = fb.n;
	return t->error == PYD_E_EXITED || t->error == PYD_E_NOMEM ? t->error
								   : PYD_OK;
}

/* ---- edges and cycles ------------------------------------------------ */

enum pyd_err tasks_build_awaits(struct tctx *c, struct pyd_task_graph *g)
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
			t->awaited_by = malloc(c->nab[i] * sizeof *t->awaited_by);
			if (!t->awaited_by)
				err = PYD_E_NOMEM;
			for (size_t k = 0; !err && k < c->nab[i]; k++)
				t->awaited_by[k] = c->raw[c->ab[i][k]].id;
			t->nawaited_by = err ? 0 : c->nab[i];
		}
		if (!err && count[i] &&
		    !(t->awaits = malloc(count[i] * sizeof *t->awaits)))
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
	if (g->ncycles % 16 == 0) {
		void *p = realloc(g->cycles, (g->ncycles + 16) * sizeof *g->cycles);
		if (!p)
			return PYD_E_NOMEM;
		g->cycles = p;
	}
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
enum pyd_err tasks_find_cycles(struct tctx *c, struct pyd_task_graph *g)
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

/* ---- entry points ---------------------------------------------------- */

static bool module_mapped(struct pyd_session *s)
{
	const struct pyd_mapping *maps;
	size_t n;
	if (!s->src->mappings || s->src->mappings(s->src->ctx, &maps, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *base = maps[i].path ? strrchr(maps[i].path, '/') : NULL;
		if (base && strncmp(base + 1, "_asyncio.", 9) == 0)
			return true;
	}
	return false;
}

/* Does the source name the files it maps?  Only then does an _asyncio
 * module missing from them say anything. */
static bool files_named(struct pyd_session *s)
{
	const struct pyd_mapping *maps;
	size_t n;
	if (!s->src->mappings || s->src->mappings(s->src->ctx, &maps, &n))
		return false;
	for (size_t i = 0; i < n; i++)
		if (maps[i].path)
			return true;
	return false;
}

void tasks_ctx_free(struct tctx *c)
{
	if (c->ab)
		for (size_t i = 0; i < c->nraw; i++)
			free(c->ab[i]);
	free(c->ab);
	free(c->nab);
	free(c->raw);
	free(c->threads);
	free(c->hkeys);
	free(c->hvals);
	free(c);
}

/* Grow the per-task arrays to the number of raw tasks (awaiters found
 * while decoding add tasks). */
enum pyd_err tasks_grow_tasks(struct tctx *c, struct pyd_task_graph *g,
			       size_t *cap)
{
	if (c->nraw <= *cap)
		return PYD_OK;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < c->nraw)
		ncap *= 2;
	void *t = realloc(g->tasks, ncap * sizeof *g->tasks);
	if (t)
		g->tasks = t;
	void *a = realloc(c->ab, ncap * sizeof *c->ab);
	if (a)
		c->ab = a;
	void *na = realloc(c->nab, ncap * sizeof *c->nab);
	if (na)
		c->nab = na;
	if (!t || !a || !na)
		return PYD_E_NOMEM;
	*cap = ncap;
	return PYD_OK;
}

static enum pyd_err decode_all(struct tctx *c, struct pyd_task_graph *g)
{
	size_t cap = 0;
	struct id_list ids = {0};
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < c->nraw && !err; i++) {
		if ((err = tasks_grow_tasks(c, g, &cap)))
			break;
		c->ab[i] = NULL;
		c->nab[i] = 0;
		g->ntasks = i + 1; /* decode_task leaves it freeable */
		if ((err = decode_task(c, i, &g->tasks[i], &g->retries)))
			break;
		enum pyd_err e = read_awaiters(c, &c->raw[i], &ids);
		if (e == PYD_E_EXITED || e == PYD_E_NOMEM) {
			err = e;
			break;
		}
		if (e && !g->tasks[i].error)
			g->tasks[i].error = e;
		for (size_t k = 0; k < ids.n && !err; k++) {
			long w = awaiter_index(c, ids.v[k], &err);
			if (w < 0 || (size_t)w == i)
				continue;
			if (c->nab[i] % 8 == 0) {
				void *p = realloc(c->ab[i], (c->nab[i] + 8) *
								    sizeof *c->ab[i]);
				if (!p) {
					err = PYD_E_NOMEM;
					break;
				}
				c->ab[i] = p;
			}
			c->ab[i][c->nab[i]++] = (uint32_t)w;
		}
	}
	free(ids.v);
	if (!err && py_layout_has_py_tasks(c->L))
		err = tasks_py_edges(c);
	if (!err)
		err = tasks_build_awaits(c, g);
	if (!err)
		err = tasks_find_cycles(c, g);
	return err;
}

bool pyd_tasks_supported(const struct pyd_session *s)
{
	return s->rt.runtime_addr && (py_layout_has_old_tasks(&s->layout) ||
				      py_layout_has_tasks(&s->layout));
}

enum pyd_err pyd_dump_tasks(struct pyd_session *s, struct pyd_task_graph *g)
{
	memset(g, 0, sizeof *g);
	if (!pyd_tasks_supported(s))
		return PYD_E_UNSUPPORTED;
	if (py_layout_has_old_tasks(&s->layout))
		return tasks_dump_legacy(s, g);
	/* No binaries to find the section in (a core from 3.14+ found by
	 * its cookie), or the _asyncio module's file is out of reach (lldb
	 * does not load a chroot's modules): look for the block itself. */
	if (!s->rt.asyncio_debug_addr &&
	    (!s->rt.py_version_addr || module_mapped(s)))
		s->rt.asyncio_debug_addr = pyd_asyncio_find_block(s);
	if (!s->rt.asyncio_debug_addr) {
		/* Not found.  With the interpreter's binary read (Py_Version
		 * was resolved from it) and no _asyncio module mapped, the
		 * target never imported asyncio: it has no tasks.  Else the
		 * module's file could not be read (a core without it). */
		if (s->rt.py_version_addr && files_named(s) && !module_mapped(s))
			return PYD_OK;
		return PYD_E_READ;
	}
	uint8_t raw[PYD_ASYNCIO_OFFSETS_SIZE];
	struct tctx *c = calloc(1, sizeof *c);
	if (!c)
		return PYD_E_NOMEM;
	c->s = s;
	c->L = &s->layout;
	enum pyd_err err = pyd_read(s->src, s->rt.asyncio_debug_addr, raw,
				    sizeof raw);
	if (!err && pyd_asyncio_offsets_parse(raw, sizeof raw, &c->ao))
		err = PYD_E_READ;
	if (err) {
		tasks_ctx_free(c);
		return err;
	}
	g->asyncio_loaded = true;
	err = list_tasks(c, g);
	if (err == PYD_E_TORN || err == PYD_E_READ) {
		/* Decode what the last pass listed; say it may be partial. */
		g->error = err;
		err = PYD_OK;
	}
	g->truncated = c->capped;
	if (!err)
		err = decode_all(c, g);
	tasks_ctx_free(c);
	if (err)
		pyd_task_graph_free(g);
	return err;
}

void pyd_task_graph_free(struct pyd_task_graph *g)
{
	for (size_t i = 0; i < g->ntasks; i++) {
		free((char *)g->tasks[i].name);
		free(g->tasks[i].coro_stack);
		free(g->tasks[i].awaits);
		free(g->tasks[i].awaited_by);
	}
	free(g->tasks);
	for (size_t i = 0; i < g->ncycles; i++)
		free(g->cycles[i].ids);
	free(g->cycles);
	memset(g, 0, sizeof *g);
}
