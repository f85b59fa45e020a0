/*
 * asyncio tasks of CPython 3.7 - 3.13, from the asyncio module state (see
 * the comment at the top of tasks.c, which holds the 3.14+ decoder and the
 * graph building both share); and the pure-Python tasks 3.14+ still keeps
 * there (tasks_list_py, tasks_py_edges at the end), for tasks.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "session.h"
#include "tasks.h"
#include "unicode.h"

/* ---- CPython 3.7 - 3.13 ---------------------------------------------- */

/*
 * Before 3.14 the tasks are in the asyncio.tasks module: `_all_tasks`
 * (3.7-3.11), or `_scheduled_tasks` and `_eager_tasks` (3.12, 3.13): a
 * WeakSet (its `data` attribute, a set of weakrefs to the tasks) or a set.
 * With the C accelerator they are the _asyncio module's objects.  The
 * running task of each loop is a value of `_current_tasks` (loop -> task).
 * A task's thread is the one whose thread_id its loop's `_thread_id`
 * holds (set while the loop runs; None for a loop no thread runs).
 *
 * Tasks are C Tasks (_asyncio.Task and subclasses): fut_state, task_name
 * (a str; 3.12+ an int N meaning "Task-N" until get_name()), task_coro,
 * task_fut_waiter (what the task's coroutine chain yielded: the future the
 * task waits on).  Who awaits whom comes from that waiter, as
 * tests/targets/asyncio_graph.py derives it: a Task is awaited directly;
 * a gather() future's `_children` (recursively); any other future F is
 * awaited through the tasks whose done-callbacks lead to F -- shield()'s
 * `_inner_done_callback` closure holds F, a TaskGroup's `_on_task_done`
 * bound method's TaskGroup holds F as `_on_completed_fut`.
 *
 * Coroutine stacks: <= 3.10 the generator's gi_frame is a PyFrameObject
 * whose awaited object (in `await` / `yield from`, i.e. the next opcode is
 * YIELD_FROM) is the top of its value stack; 3.11+ the frame is embedded
 * (gi_iframe) and the awaited object is localsplus[stacktop - 1] while
 * the frame state (3.13) or the RESUME after prev_instr (3.11, 3.12) says
 * it is suspended in `await`.
 */

#define OLD_MAX_GATHER_DEPTH 64
#define ASEND_GEN 16      /* PyAsyncGenASend.ags_gen / AThrow.agt_gen */

enum old_kind {
	OLD_OTHER,
	OLD_TASK,    /* _asyncio.Task or a subclass */
	OLD_PYTASK,  /* asyncio.tasks._PyTask or a subclass */
	OLD_GEN,     /* coroutine, generator, async_generator */
	OLD_AWAITER, /* async_generator_asend / _athrow */
	OLD_METHOD,  /* bound method */
	OLD_FUNC,    /* Python function */
	OLD_NONE,    /* None: a pure-Python task's "no waiter" */
};

static enum old_kind old_kind(struct tctx *c, uint64_t obj)
{
	uint64_t type;
	if (pyd_obj_type(c->s, obj, &type) || !type)
		return OLD_OTHER;
	const size_t n = sizeof c->task_types / sizeof *c->task_types;
	/* Small memo: task_types holds Task types, types[] the rest. */
	for (size_t i = 0; i < c->ntask_types; i++)
		if (c->task_types[i] == type)
			return OLD_TASK;
	size_t h = (size_t)((type >> 3) * 0x9E3779B97F4A7C15ULL) % TYPE_CACHE;
	for (size_t p = 0; p < TYPE_CACHE; p++) {
		struct type_entry *e = &c->types[(h + p) % TYPE_CACHE];
		if (e->addr == type)
			return (enum old_kind)e->flags;
		if (!e->addr)
			break;
	}
	enum old_kind k = OLD_OTHER;
	char name[MAX_TYPE_NAME + 1];
	pyd_type_name(c->s, type, name, sizeof name);
	if (!strcmp(name, "coroutine") || !strcmp(name, "generator") ||
	    !strcmp(name, "async_generator"))
		k = OLD_GEN;
	else if (!strcmp(name, "async_generator_asend") ||
		 !strcmp(name, "async_generator_athrow"))
		k = OLD_AWAITER;
	else if (!strcmp(name, "method"))
		k = OLD_METHOD;
	else if (!strcmp(name, "function"))
		k = OLD_FUNC;
	else if (!strcmp(name, "NoneType"))
		k = OLD_NONE;
	else {
		uint64_t t = type;
		for (int depth = 0; t && depth < 32 && k == OLD_OTHER; depth++) {
			for (size_t i = 0; i < c->npytask_types; i++)
				if (c->pytask_types[i] == t)
					k = OLD_PYTASK;
			pyd_type_name(c->s, t, name, sizeof name);
			if (!strcmp(name, "_asyncio.Task")) {
				k = OLD_TASK;
				break;
			}
			if (pyd_read_ptr(c->s, t + (uint64_t)c->L->old_tasks.tp_base,
					 &t))
				break;
		}
	}
	if (k == OLD_TASK && c->ntask_types < n) {
		c->task_types[c->ntask_types++] = type;
		return k;
	}
	if (c->ntypes < TYPE_CACHE / 2)
		for (size_t p = 0; p < TYPE_CACHE; p++) {
			struct type_entry *e = &c->types[(h + p) % TYPE_CACHE];
			if (!e->addr) {
				*e = (struct type_entry){type, (uint64_t)k, KIND_OTHER};
				c->ntypes++;
				break;
			}
		}
	return k;
}

/* A task's thread: the one running its loop. */
static const struct thread_info *old_thread_of(struct tctx *c,
					       const struct raw_task *r)
{
	uint64_t tid_obj;
	int64_t pth;
	if (!r->loop || pyd_obj_attr(c->s, r->loop, "_thread_id", &tid_obj) ||
	    !tid_obj || pyd_long_value(c->s, tid_obj, &pth))
		return NULL;
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].pthread == (uint64_t)pth)
			return &c->threads[i];
	return NULL;
}

/* Record a pending task (anything else is skipped). */
static enum pyd_err old_add(struct tctx *c, uint64_t id)
{
	const struct py_old_tasks *o = &c->L->old_tasks;
	uint8_t obj[MAX_TASK_SIZE];
	if (!id || tasks_find_task(c, id) >= 0)
		return PYD_OK;
	enum old_kind kind = old_kind(c, id);
	struct raw_task py = {.id = id, .py = true};
	int32_t st;
	if (kind == OLD_PYTASK) {
		uint64_t state;
		/* Future._state is a class attribute (PENDING) until the
		 * future is done; _fut_waiter a class attribute None. */
		if (pyd_obj_attr(c->s, id, "_state", &state) ||
		    (state && !pyd_str_eq(c->s, state, "PENDING")) ||
		    pyd_obj_type(c->s, id, &py.type) ||
		    pyd_obj_attr(c->s, id, "_name", &py.name) ||
		    pyd_obj_attr(c->s, id, "_coro", &py.coro) ||
		    pyd_obj_attr(c->s, id, "_fut_waiter", &py.waiter) ||
		    pyd_obj_attr(c->s, id, "_loop", &py.loop))
			return PYD_OK;
		st = FUT_PENDING;
	} else if (kind != OLD_TASK || o->py_only) {
		/* 3.14+: C tasks come from the per-thread lists only. */
		return PYD_OK;
	} else if ((size_t)o->task_size > sizeof obj ||
		   tasks_rd(c, id, obj, (size_t)o->task_size)) {
		return PYD_OK;
	} else {
		memcpy(&st, obj + o->fut_state, sizeof st);
	}
	if (st != FUT_PENDING)
		return PYD_OK;
	if (c->nraw >= PYD_MAX_TASKS) {
		c->capped = true;
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
	if (kind == OLD_PYTASK) {
		c->raw[c->nraw] = py;
		if (o->py_only) {
			/* tasks.c decodes it: it wants the thread now. */
			const struct thread_info *th = old_thread_of(c, &py);
			c->raw[c->nraw].tid = th ? th->tid : 0;
			c->raw[c->nraw].tstate = th ? th->tstate : 0;
		}
	} else
		c->raw[c->nraw] = (struct raw_task){
			.id = id,
			.type = pyd_u64_at(obj, (uint64_t)c->L->object.ob_type),
			.name = o->task_name >= 0
					? pyd_u64_at(obj, (uint64_t)o->task_name) : 0,
			.coro = pyd_u64_at(obj, (uint64_t)o->task_coro),
			.waiter = pyd_u64_at(obj, (uint64_t)o->task_fut_waiter),
			.loop = pyd_u64_at(obj, (uint64_t)o->fut_loop),
		};
	c->raw[c->nraw].state = st;
	size_t slot = tasks_hslot(c, id);
	c->hkeys[slot] = id;
	c->hvals[slot] = (uint32_t)c->nraw++;
	return PYD_OK;
}

/* The tasks in a WeakSet (weak = true) or a set. */
static enum pyd_err old_add_set(struct tctx *c, uint64_t set, bool weak)
{
	uint64_t *keys;
	size_t n;
	enum pyd_err err;
	if (!set)
		return PYD_OK;
	if (weak) {
		uint64_t data;
		if ((err = pyd_obj_attr(c->s, set, "data", &data)))
			return err;
		set = data;
		if (!set)
			return PYD_E_READ;
	}
	if ((err = pyd_set_items(c->s, set, &keys, &n)))
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t t = keys[i];
		if (weak && pyd_weakref_get(c->s, keys[i], &t))
			continue;
		err = old_add(c, t);
	}
	free(keys);
	return err;
}

/* Thread states of one interpreter, with their pthread ids. */
static enum pyd_err old_threads(struct tctx *c, uint64_t interp)
{
	const struct py_layout *L = c->L;
	uint64_t ts;
	enum pyd_err err = tasks_rd(c, interp + (uint64_t)L->interp.tstate_head, &ts,
			      sizeof ts);
	for (size_t n = 0; !err && ts && n < MAX_THREADS; n++) {
		uint64_t next = 0, pth = 0, tid = 0;
		if ((err = tasks_rd(c, ts + (uint64_t)L->tstate.next, &next, 8)) ||
		    (err = tasks_rd(c, ts + (uint64_t)L->tstate.thread_id, &pth, 8)))
			break;
		if (L->tstate.native_thread_id != PYD_NO_FIELD)
			tasks_rd(c, ts + (uint64_t)L->tstate.native_thread_id, &tid, 8);
		else {
			/* glibc x86-64: offsetof(struct pthread, tid) */
			int32_t t32 = 0;
			if (pth && !pyd_read_i32(c->s, pth + 0x2d0, &t32))
				tid = (uint64_t)(int64_t)t32;
		}
		if ((err = tasks_add_thread(c, ts, (int64_t)tid, 0)))
			break;
		c->threads[c->nthreads - 1].pthread = pth;
		ts = next;
	}
	return err;
}

static enum pyd_err old_list_module(struct tctx *c, uint64_t interp,
				    struct pyd_task_graph *g);

static enum pyd_err old_list_interp(struct tctx *c, uint64_t interp,
				    struct pyd_task_graph *g)
{
	enum pyd_err err = old_threads(c, interp);
	return err ? err : old_list_module(c, interp, g);
}

/* The tasks of one interpreter's asyncio.tasks module. */
static enum pyd_err old_list_module(struct tctx *c, uint64_t interp,
				    struct pyd_task_graph *g)
{
	const struct py_layout *L = c->L;
	uint64_t modules, mod, md;
	enum pyd_err err = tasks_rd(c, interp + (uint64_t)L->old_tasks.interp_modules,
			      &modules, sizeof modules);
	if (err)
		return err;
	if (!modules)
		return PYD_OK;
	if ((err = pyd_dict_get(c->s, modules, "asyncio.tasks", &mod)))
		return err;
	if (!mod)
		return PYD_OK; /* this interpreter never imported asyncio */
	g->asyncio_loaded = true;
	if ((err = tasks_rd(c, mod + PYD_MODULE_MD_DICT, &md, sizeof md)))
		return err;
	uint64_t *kv;
	size_t n;
	if ((err = pyd_dict_items(c->s, md, &kv, &n)))
		return err;
	uint64_t all, sched, eager, current, pytask;
	pyd_kv_find(c->s, md, kv, n, "_all_tasks", &all);
	pyd_kv_find(c->s, md, kv, n, "_scheduled_tasks", &sched);
	pyd_kv_find(c->s, md, kv, n, "_eager_tasks", &eager);
	pyd_kv_find(c->s, md, kv, n, "_current_tasks", &current);
	pyd_kv_find(c->s, md, kv, n, "_PyTask", &pytask);
	free(kv);
	if (pytask && c->npytask_types < sizeof c->pytask_types /
						 sizeof *c->pytask_types)
		c->pytask_types[c->npytask_types++] = pytask;
	size_t first = c->nraw;
	/* The running tasks first: a task in two places is listed once. */
	if (current && !pyd_dict_items(c->s, current, &kv, &n)) {
		for (size_t i = 0; i < n && !err; i++)
			err = old_add(c, kv[2 * i + 1]);
		for (size_t i = 0; i < n; i++) {
			long k = tasks_find_task(c, kv[2 * i + 1]);
			if (k >= (long)first)
				c->raw[k].running = true;
		}
		free(kv);
	}
	if (!err)
		err = old_add_set(c, all, true);
	if (!err)
		err = old_add_set(c, sched, true);
	if (!err)
		err = old_add_set(c, eager, false);
	return err;
}

static enum pyd_err old_list_once(struct tctx *c, uint64_t *interps,
				  struct pyd_task_graph *g)
{
	size_t ninterps;
	c->npytask_types = 0;
	enum pyd_err err = tasks_begin_pass(c, interps, &ninterps);
	for (size_t n = ninterps; !err && n-- > 0;)
		err = old_list_interp(c, interps[n], g);
	return err;
}

static bool old_push(struct pyd_frame_buf *b, struct tctx *c, uint64_t code,
		     int64_t off)
{
	return pyd_frame_push_at(c->s, b, code, off) == PYD_OK;
}

/* PyFrameObject (<= 3.10): push it; *next is what it awaits, or 0. */
static enum pyd_err old_frame_object(struct tctx *c, uint64_t f,
				     struct pyd_frame_buf *out, uint64_t *next)
{
	const struct py_layout *L = c->L;
	const struct py_old_tasks *o = &L->old_tasks;
	uint8_t buf[256];
	*next = 0;
	if (tasks_rd(c, f, buf, 128))
		return PYD_E_READ;
	uint64_t code = pyd_u64_at(buf, (uint64_t)L->frame_object.f_code);
	int32_t lasti;
	memcpy(&lasti, buf + L->frame_object.f_lasti, sizeof lasti);
	bool units = L->line_model == PY_LINES_310;
	if (!old_push(out, c, code, units && lasti >= 0 ? 2 * (int64_t)lasti
							: lasti))
		return PYD_E_READ;
	if (lasti < 0)
		return PYD_OK; /* not started */
	uint64_t top; /* address of the top stack slot */
	if (o->f_stacktop != PYD_NO_FIELD) {
		uint64_t st = pyd_u64_at(buf, (uint64_t)o->f_stacktop);
		if (!st)
			return PYD_OK; /* running or finished */
		top = st - 8;
	} else {
		int8_t state = (int8_t)buf[o->f_state];
		int32_t depth;
		memcpy(&depth, buf + o->f_stackdepth, sizeof depth);
		if (state != o->fs_suspended || depth < 1 || depth > (1 << 20))
			return PYD_OK;
		top = pyd_u64_at(buf, (uint64_t)o->f_valuestack) + 8 * (uint64_t)(depth - 1);
	}
	/* In `await` / `yield from` when the next opcode is YIELD_FROM. */
	uint64_t co_code;
	uint8_t op;
	int64_t at = (units ? 2 * (int64_t)lasti : lasti) + 2;
	if (pyd_read_ptr(c->s, code + (uint64_t)o->co_code, &co_code) ||
	    tasks_rd(c, co_code + (uint64_t)L->bytes.ob_sval + (uint64_t)at, &op, 1))
		return PYD_E_READ;
	if (op != o->yield_from_op)
		return PYD_OK;
	return pyd_read_ptr(c->s, top, next) ? PYD_E_READ : PYD_OK;
}

/* Embedded frame (3.11 - 3.13) of the generator at gen. */
static enum pyd_err old_gen_iframe(struct tctx *c, uint64_t gen,
				   struct pyd_frame_buf *out, uint64_t *next)
{
	const struct py_layout *L = c->L;
	const struct py_old_tasks *o = &L->old_tasks;
	uint8_t buf[256];
	size_t need = (size_t)(o->gi_iframe + o->if_localsplus);
	*next = 0;
	if (need > sizeof buf || tasks_rd(c, gen, buf, need))
		return PYD_E_READ;
	int8_t state = (int8_t)buf[o->gi_frame_state];
	if (state < o->fs_created || state > o->fs_executing)
		return PYD_OK; /* finished: no frame */
	const uint8_t *f = buf + o->gi_iframe;
	uint64_t code = pyd_u64_at(f, (uint64_t)L->iframe.code);
	uint64_t instr = pyd_u64_at(f, (uint64_t)L->iframe.instr);
	if (!old_push(out, c, code, pyd_iframe_offset(L, code, instr)))
		return PYD_E_READ;
	if (state == o->fs_created || state == o->fs_executing)
		return PYD_OK;
	if (o->fs_yield_from) {
		if (state != o->fs_yield_from)
			return PYD_OK;
	} else {
		uint8_t unit[2];
		if (tasks_rd(c, instr + 2, unit, 2))
			return PYD_E_READ;
		if ((unit[0] != o->resume_ops[0] && unit[0] != o->resume_ops[1]) ||
		    unit[1] < 2)
			return PYD_OK;
	}
	int32_t stacktop;
	memcpy(&stacktop, f + o->if_stacktop, sizeof stacktop);
	if (stacktop < 1 || stacktop > (1 << 20))
		return PYD_E_READ;
	uint64_t slot = gen + (uint64_t)(o->gi_iframe + o->if_localsplus) +
			8 * (uint64_t)(stacktop - 1);
	return pyd_read_ptr(c->s, slot, next) ? PYD_E_READ : PYD_OK;
}

/* From a task's coroutine down, outermost first. */
static enum pyd_err old_coro_chain(struct tctx *c, uint64_t coro,
				   struct pyd_frame_buf *out)
{
	const struct py_old_tasks *o = &c->L->old_tasks;
	for (size_t depth = 0; coro; depth++) {
		if (depth >= MAX_CORO_DEPTH)
			return PYD_E_READ;
		enum old_kind k = old_kind(c, coro);
		uint64_t next = 0;
		enum pyd_err err;
		if (k == OLD_AWAITER) {
			if (pyd_read_ptr(c->s, coro + ASEND_GEN, &next))
				return PYD_E_READ;
			coro = next;
			continue;
		}
		if (k != OLD_GEN)
			return PYD_OK; /* a Future, a plain iterator, ... */
		if (o->gi_frame != PYD_NO_FIELD) {
			uint64_t f;
			if (pyd_read_ptr(c->s, coro + (uint64_t)o->gi_frame, &f))
				return PYD_E_READ;
			if (!f)
				return PYD_OK; /* finished */
			err = old_frame_object(c, f, out, &next);
		} else {
			err = old_gen_iframe(c, coro, out, &next);
		}
		if (err)
			return err;
		coro = next;
	}
	return PYD_OK;
}

/* The frame of a coroutine, as it appears on a thread's stack. */
static uint64_t old_coro_frame(struct tctx *c, uint64_t coro)
{
	const struct py_old_tasks *o = &c->L->old_tasks;
	uint64_t f = 0;
	if (o->gi_frame != PYD_NO_FIELD)
		pyd_read_ptr(c->s, coro + (uint64_t)o->gi_frame, &f);
	else
		f = coro + (uint64_t)o->gi_iframe;
	return f;
}

/* A running task: its thread's stack down to its coroutine's frame. */
static enum pyd_err old_running_stack(struct tctx *c, uint64_t tstate,
				      uint64_t coro, struct pyd_frame_buf *out,
				      bool *found)
{
	const struct py_layout *L = c->L;
	uint64_t target = old_coro_frame(c, coro), f;
	uint8_t buf[256];
	*found = false;
	if (!target)
		return PYD_OK;
	enum pyd_err err = tasks_rd(c, tstate + (uint64_t)L->tstate.frame, &f, sizeof f);
	if (!err && L->frame_model == PY_FRAMES_CFRAME && f)
		err = tasks_rd(c, f + (uint64_t)L->cframe.current_frame, &f, sizeof f);
	for (size_t steps = 0; !err && f && steps < PYD_MAX_FRAMES; steps++) {
		uint64_t code, prev;
		int64_t off;
		bool shim = false;
		if ((err = tasks_rd(c, f, buf, 128)))
			break;
		if (L->frame_model == PY_FRAMES_OBJECT) {
			int32_t lasti;
			code = pyd_u64_at(buf, (uint64_t)L->frame_object.f_code);
			prev = pyd_u64_at(buf, (uint64_t)L->frame_object.f_back);
			memcpy(&lasti, buf + L->frame_object.f_lasti, sizeof lasti);
			off = L->line_model == PY_LINES_310 && lasti >= 0
				      ? 2 * (int64_t)lasti : lasti;
		} else {
			code = pyd_u64_at(buf, (uint64_t)L->iframe.code);
			prev = pyd_u64_at(buf, (uint64_t)L->iframe.previous);
			off = pyd_iframe_offset(L, code,
						pyd_u64_at(buf, (uint64_t)L->iframe.instr));
			shim = L->owner_first_shim != PYD_NO_FIELD &&
			       buf[L->iframe.owner] >= L->owner_first_shim;
		}
		if (!shim && !old_push(out, c, code, off))
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

/* The tasks whose done-callbacks lead to a future: (future, task index)
 * pairs. */
struct cb_edge {
	uint64_t fut;
	uint32_t task;
};

struct cb_edges {
	struct cb_edge *v;
	size_t n, cap;
};

static bool cb_push(struct cb_edges *e, uint64_t fut, size_t task)
{
	if (!fut)
		return true;
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		void *p = realloc(e->v, cap * sizeof *e->v);
		if (!p)
			return false;
		e->v = p;
		e->cap = cap;
	}
	e->v[e->n++] = (struct cb_edge){fut, (uint32_t)task};
	return true;
}

static enum pyd_err old_callback(struct tctx *c, uint64_t cb, size_t task,
				 struct cb_edges *e)
{
	const struct py_old_tasks *o = &c->L->old_tasks;
	enum old_kind k = old_kind(c, cb);
	if (k == OLD_METHOD) {
		/* TaskGroup._on_task_done: its TaskGroup's completion future. */
		uint64_t self, fut;
		if (pyd_read_ptr(c->s, cb + (uint64_t)o->meth_self, &self) || !self ||
		    pyd_obj_attr(c->s, self, "_on_completed_fut", &fut))
			return PYD_OK;
		return cb_push(e, fut, task) ? PYD_OK : PYD_E_NOMEM;
	}
	if (k != OLD_FUNC)
		return PYD_OK;
	/* shield()'s _inner_done_callback: the outer future is in a cell. */
	uint64_t name, closure, *cells;
	size_t n;
	if (pyd_read_ptr(c->s, cb + (uint64_t)o->func_name, &name) ||
	    !pyd_str_eq(c->s, name, "_inner_done_callback") ||
	    pyd_read_ptr(c->s, cb + (uint64_t)o->func_closure, &closure) ||
	    !closure || pyd_seq_items(c->s, closure, false, &cells, &n))
		return PYD_OK;
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t v;
		if (!pyd_read_ptr(c->s, cells[i] + (uint64_t)o->cell_ref, &v) &&
		    !cb_push(e, v, task))
			err = PYD_E_NOMEM;
	}
	free(cells);
	return err;
}

static enum pyd_err old_callbacks(struct tctx *c, size_t task,
				  struct cb_edges *e)
{
	const struct py_old_tasks *o = &c->L->old_tasks;
	uint64_t cb0, list, *items;
	size_t n;
	uint64_t id = c->raw[task].id;
	enum pyd_err err = PYD_OK;
	if (c->raw[task].py) {
		if (pyd_obj_attr(c->s, id, "_callbacks", &list) || !list ||
		    pyd_seq_items(c->s, list, true, &items, &n))
			return PYD_OK;
	} else {
		if (!pyd_read_ptr(c->s, id + (uint64_t)o->fut_callback0, &cb0) &&
		    cb0)
			err = old_callback(c, cb0, task, e);
		if (err ||
		    pyd_read_ptr(c->s, id + (uint64_t)o->fut_callbacks, &list) ||
		    !list || pyd_seq_items(c->s, list, true, &items, &n))
			return err;
	}
	/* Items are (callback, context) tuples. */
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t cb;
		if (!pyd_read_ptr(c->s, items[i] + (uint64_t)o->tuple_items, &cb) &&
		    cb)
			err = old_callback(c, cb, task, e);
	}
	free(items);
	return err;
}

static enum pyd_err old_edge(struct tctx *c, size_t waiter, long target)
{
	if (target < 0 || (size_t)target == waiter)
		return PYD_OK;
	size_t i = (size_t)target;
	if (c->native_edges && !c->raw[waiter].py && !c->raw[i].py)
		return PYD_OK; /* CPython's own awaited_by has it (or not) */
	for (size_t k = 0; k < c->nab[i]; k++)
		if (c->ab[i][k] == waiter)
			return PYD_OK;
	if (c->nab[i] % 8 == 0) {
		void *p = realloc(c->ab[i], (c->nab[i] + 8) * sizeof *c->ab[i]);
		if (!p)
			return PYD_E_NOMEM;
		c->ab[i] = p;
	}
	c->ab[i][c->nab[i]++] = (uint32_t)waiter;
	return PYD_OK;
}

/* Edges from a gather() future's children, recursively. */
static enum pyd_err old_gather(struct tctx *c, size_t waiter, uint64_t fut,
			       int depth, bool *was_gather)
{
	uint64_t children, *items;
	size_t n;
	*was_gather = false;
	if (depth > OLD_MAX_GATHER_DEPTH ||
	    pyd_obj_attr(c->s, fut, "_children", &children) || !children ||
	    pyd_seq_items(c->s, children, true, &items, &n))
		return PYD_OK;
	*was_gather = true;
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < n && !err; i++) {
		bool sub;
		enum old_kind k = old_kind(c, items[i]);
		if (k == OLD_TASK || k == OLD_PYTASK)
			err = old_edge(c, waiter, tasks_find_task(c, items[i]));
		else
			err = old_gather(c, waiter, items[i], depth + 1, &sub);
	}
	free(items);
	return err;
}

static enum pyd_err old_edges(struct tctx *c)
{
	struct cb_edges e = {0};
	enum pyd_err err = PYD_OK;
	for (size_t i = 0; i < c->nraw && !err; i++)
		err = old_callbacks(c, i, &e);
	for (size_t i = 0; i < c->nraw && !err; i++) {
		uint64_t w = c->raw[i].waiter;
		bool gathered;
		if (!w)
			continue;
		enum old_kind k = old_kind(c, w);
		if (k == OLD_NONE)
			continue;
		if (k == OLD_TASK || k == OLD_PYTASK) {
			err = old_edge(c, i, tasks_find_task(c, w));
			continue;
		}
		if ((err = old_gather(c, i, w, 0, &gathered)) || gathered)
			continue;
		for (size_t k = 0; k < e.n && !err; k++)
			if (e.v[k].fut == w)
				err = old_edge(c, i, (long)e.v[k].task);
	}
	free(e.v);
	return err;
}

/* A str, or (3.12+) the int N of "Task-N" until get_name(). */
static char *old_task_name(struct tctx *c, uint64_t obj)
{
	uint64_t type;
	char tname[8];
	int64_t v;
	if (pyd_obj_type(c->s, obj, &type))
		return NULL;
	pyd_type_name(c->s, type, tname, sizeof tname);
	if (!strcmp(tname, "str"))
		return pyd_read_str(c->s, obj);
	if (strcmp(tname, "int") || pyd_long_value(c->s, obj, &v))
		return NULL;
	char *out = malloc(32);
	if (out)
		snprintf(out, 32, "Task-%lld", (long long)v);
	return out;
}

/* A listed task's state, read again. */
static enum pyd_task_state old_state_now(struct tctx *c,
					 const struct raw_task *r)
{
	int32_t st;
	uint64_t state;
	if (r->py) {
		if (pyd_obj_attr(c->s, r->id, "_state", &state))
			return PYD_TASK_UNKNOWN;
		return !state || pyd_str_eq(c->s, state, "PENDING") ? PYD_TASK_PENDING
		       : pyd_str_eq(c->s, state, "CANCELLED")   ? PYD_TASK_CANCELLED
		       : pyd_str_eq(c->s, state, "FINISHED")    ? PYD_TASK_DONE
								: PYD_TASK_UNKNOWN;
	}
	if (tasks_rd(c, r->id + (uint64_t)c->L->old_tasks.fut_state, &st, sizeof st))
		return PYD_TASK_UNKNOWN;
	return tasks_task_state(st);
}

static enum pyd_err old_decode_task(struct tctx *c, size_t i,
				    struct pyd_task *t, unsigned *retries)
{
	const struct raw_task *r = &c->raw[i];
	const struct thread_info *th = old_thread_of(c, r);
	memset(t, 0, sizeof *t);
	t->id = r->id;
	t->thread = th ? th->tid : 0;
	t->state = tasks_task_state(r->state);
	t->running = r->running && th;
	char *name = r->name ? old_task_name(c, r->name) : NULL;
	if (!name) {
		name = malloc(32);
		if (!name)
			return PYD_E_NOMEM;
		snprintf(name, 32, "<task 0x%llx>", (unsigned long long)r->id);
	}
	t->name = name;
	struct pyd_frame_buf fb = {0};
	bool found = false;
	if (t->running)
		t->error = old_running_stack(c, th->tstate, r->coro, &fb, &found);
	for (unsigned retry = 0; !found; retry++) {
		fb.n = 0;
		t->error = r->coro ? old_coro_chain(c, r->coro, &fb) : PYD_OK;
		tasks_reverse_frames(fb.v, fb.n);
		if (t->error != PYD_E_READ || retry >= MAX_TASK_RETRIES)
			break;
		/* A live task may have moved on (or finished) while we read:
		 * look again.  A finished one has no stack to show. */
		(*retries)++;
		enum pyd_task_state now = old_state_now(c, r);
		if (now != PYD_TASK_PENDING && now != PYD_TASK_UNKNOWN) {
			fb.n = 0;
			t->error = PYD_OK;
			t->state = now;
			break;
		}
	}
	t->coro_stack = fb.v;
	t->ncoro = fb.n;
	return t->error == PYD_E_EXITED || t->error == PYD_E_NOMEM ? t->error
								   : PYD_OK;
}

enum pyd_err tasks_dump_legacy(struct pyd_session *s, struct pyd_task_graph *g)
{
	struct tctx *c = calloc(1, sizeof *c);
	uint64_t *interps = malloc(MAX_INTERPS * sizeof *interps);
	enum pyd_err err = c && interps ? PYD_OK : PYD_E_NOMEM;
	if (!err) {
		c->s = s;
		c->L = &s->layout;
		/* A live target's sets change while we read them. */
		for (unsigned i = 0; i <= MAX_LIST_RETRIES; i++) {
			g->asyncio_loaded = false;
			err = old_list_once(c, interps, g);
			if (err != PYD_E_TORN && err != PYD_E_READ)
				break;
			if (i < MAX_LIST_RETRIES)
				g->retries++;
		}
		if (err == PYD_E_TORN || err == PYD_E_READ) {
			g->error = err;
			err = PYD_OK;
		}
		g->truncated = c->capped;
	}
	size_t cap = 0;
	if (!err && (err = tasks_grow_tasks(c, g, &cap)) && c->ab) {
		free(c->ab); /* its entries are not set yet */
		c->ab = NULL;
	}
	for (size_t i = 0; !err && i < c->nraw; i++) {
		c->ab[i] = NULL;
		c->nab[i] = 0;
	}
	for (size_t i = 0; !err && i < c->nraw; i++) {
		g->ntasks = i + 1;
		err = old_decode_task(c, i, &g->tasks[i], &g->retries);
	}
	if (!err)
		err = old_edges(c);
	if (!err)
		err = tasks_build_awaits(c, g);
	if (!err)
		err = tasks_find_cycles(c, g);
	free(interps);
	if (c)
		tasks_ctx_free(c);
	if (err)
		pyd_task_graph_free(g);
	return err;
}

enum pyd_err tasks_list_py(struct tctx *c, uint64_t interp,
			   struct pyd_task_graph *g)
{
	return old_list_module(c, interp, g);
}

enum pyd_err tasks_py_edges(struct tctx *c)
{
	c->native_edges = true;
	return old_edges(c);
}
