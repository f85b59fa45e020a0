/*
 * The coroutine model every task lister shares (tasks.h): what an object
 * is, the await chain from a task's coroutine down, a running task's
 * stack, and a task's name.
 *
 * The await chain: while a coroutine (or generator, or async generator)
 * is suspended in `await` / `yield from`, the object it awaits is on top
 * of its frame's value stack; if that is a coroutine again (or an async
 * generator's asend/athrow awaitable, which leads to the async generator)
 * follow it down.  Where the frame is and how "suspended in await" shows
 * is a layout feature, one of three frame models:
 *
 *   frame objects (<= 3.10)  gi_frame is a PyFrameObject; in `await` when
 *                            the next opcode is YIELD_FROM; the awaited
 *                            object is the top of its value stack
 *                            (f_stacktop[-1], or 3.10's f_valuestack
 *                            [f_stackdepth - 1] while f_state says
 *                            suspended)
 *   embedded, stacktop       the frame is embedded (gi_iframe); in `await`
 *   (3.11 - 3.13)            when the frame state says so (3.13) or the
 *                            RESUME after prev_instr has oparg >= 2 (3.11,
 *                            3.12); the object is localsplus[stacktop - 1]
 *   embedded, stackpointer   frame states and the stack pointer come from
 *   (3.14+)                  _Py_DebugOffsets; the object is at
 *                            stackpointer[-awaited_slot]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "objects.h"
#include "coro.h"
#include "unicode.h"

#define FRAME_OWNED_BY_GENERATOR 1
/* We read this much of a generator object at once: its header and frame
 * and, usually, the value stack slot that says what it awaits. */
#define GEN_READ 512
/* ... and of a task's name: a short ASCII str, header and all. */
#define NAME_READ 128
/* A frame object or an interpreter frame's header fits in this. */
#define FRAME_READ 128

/* ---- small readers --------------------------------------------------- */

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

/* Read an object of the target: as much as `want` bytes if they are
 * mapped, else at least `need`; returns how many, 0 on failure. */
static size_t read_obj(struct tctx *c, uint64_t addr, uint8_t *buf,
		       size_t want, size_t need)
{
	if (!tasks_rd(c, addr, buf, want))
		return want;
	return need < want && !tasks_rd(c, addr, buf, need) ? need : 0;
}

/* ---- what objects are ------------------------------------------------ */

size_t tasks_gen_size(const struct py_layout *L)
{
	return py_layout_has_tasks(L)
		       ? (size_t)(L->gen.gi_iframe + L->iframe.localsplus)
		       : 0;
}

static bool is_listed_task_type(const struct tctx *c, uint64_t type)
{
	for (size_t i = 0; i < c->ntask_types; i++)
		if (c->task_types[i] == type)
			return true;
	return false;
}

static enum obj_kind kind_by_name(const char *name)
{
	static const struct {
		const char *name;
		enum obj_kind kind;
	} kinds[] = {
		{"coroutine", KIND_GEN},
		{"generator", KIND_GEN},
		{"async_generator", KIND_GEN},
		{"async_generator_asend", KIND_AWAITER},
		{"async_generator_athrow", KIND_AWAITER},
		{"method", KIND_METHOD},
		{"function", KIND_FUNC},
		{"NoneType", KIND_NONE},
	};
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (!strcmp(name, kinds[i].name))
			return kinds[i].kind;
	return KIND_OTHER;
}

/* A task type: _asyncio.Task, asyncio.tasks._PyTask, or a subclass. */
static enum obj_kind task_kind(struct tctx *c, uint64_t type)
{
	char name[MAX_TYPE_NAME + 1];
	for (int depth = 0; type && depth < 32; depth++) {
		for (size_t i = 0; i < c->npytask_types; i++)
			if (c->pytask_types[i] == type)
				return KIND_PYTASK;
		pyd_type_name(c->s, type, name, sizeof name);
		if (!strcmp(name, "_asyncio.Task"))
			return KIND_TASK;
		if (pyd_read_ptr(c->s, type + (uint64_t)c->L->objects.tp_base,
				 &type))
			break;
	}
	return KIND_OTHER;
}

/* tp_flags bits 24-31: "fast subclass" flags of int, tuple, list, bytes,
 * str, dict, BaseException and type; no task is one of those. */
#define TPFLAGS_FAST_SUBCLASS_MASK (0xffULL << 24)

/* Classify a type from one read of its header: flags, name, and for
 * generators the shape, since their names live in .rodata, which a core
 * without its binaries lacks (then the shape alone decides, where the
 * layout gives it). */
static struct type_entry classify(struct tctx *c, uint64_t type)
{
	const struct py_layout *L = c->L;
	struct type_entry t = {type, KIND_OTHER, 0};
	uint8_t buf[256];
	size_t need = (size_t)L->object.tp_flags + 8;
	if (need < (size_t)L->object.tp_name + 24)
		need = (size_t)L->object.tp_name + 24;
	if (need > sizeof buf || tasks_rd(c, type, buf, need))
		return t;
	t.flags = pyd_u64_at(buf, (uint64_t)L->object.tp_flags);
	size_t shape = c->gen_size;
	uint64_t basic = pyd_u64_at(buf, (uint64_t)L->object.tp_name + 8);
	uint64_t item = pyd_u64_at(buf, (uint64_t)L->object.tp_name + 16);
	bool gen_shape = !shape || (basic == shape && item == 8);
	char name[MAX_TYPE_NAME + 1];
	if (!read_cstr(c, pyd_u64_at(buf, (uint64_t)L->object.tp_name), name,
		       sizeof name)) {
		t.kind = shape && gen_shape ? KIND_GEN : KIND_OTHER;
		return t;
	}
	t.kind = kind_by_name(name);
	if (t.kind != KIND_OTHER && !pyd_interp_static_type(c->s, type, t.flags))
		t.kind = KIND_OTHER;
	if (t.kind == KIND_GEN && !gen_shape)
		t.kind = KIND_OTHER;
	else if (t.kind == KIND_OTHER &&
		 !(t.flags & TPFLAGS_FAST_SUBCLASS_MASK))
		t.kind = task_kind(c, type);
	return t;
}

/* What the type makes, cached for the graph. */
static struct type_entry type_of(struct tctx *c, uint64_t type)
{
	if (!type)
		return (struct type_entry){0, KIND_OTHER, 0};
	size_t h = (size_t)((type >> 3) * 0x9E3779B97F4A7C15ULL) % TYPE_CACHE;
	for (size_t p = 0; p < TYPE_CACHE; p++) {
		const struct type_entry *e = &c->types[(h + p) % TYPE_CACHE];
		if (e->addr == type)
			return *e;
		if (!e->addr)
			break;
	}
	struct type_entry t = classify(c, type);
	if (t.kind == KIND_TASK && !is_listed_task_type(c, type) &&
	    c->ntask_types < sizeof c->task_types / sizeof *c->task_types)
		c->task_types[c->ntask_types++] = type;
	/* Keep the table at most half full, so probes stay short; past
	 * that a type is classified again each time. */
	if (c->ntypes < TYPE_CACHE / 2)
		for (size_t p = 0; p < TYPE_CACHE; p++) {
			struct type_entry *e = &c->types[(h + p) % TYPE_CACHE];
			if (!e->addr) {
				*e = t;
				c->ntypes++;
				break;
			}
		}
	return t;
}

enum obj_kind tasks_kind_of_type(struct tctx *c, uint64_t type)
{
	return is_listed_task_type(c, type) ? KIND_TASK : type_of(c, type).kind;
}

enum obj_kind tasks_kind(struct tctx *c, uint64_t obj)
{
	uint64_t type;
	if (pyd_obj_type(c->s, obj, &type))
		return KIND_OTHER;
	return tasks_kind_of_type(c, type);
}

/* ---- the await chain ------------------------------------------------- */

static bool push_at(struct pyd_frame_buf *b, struct tctx *c, uint64_t code,
		    int64_t off)
{
	return pyd_frame_push_at(c->s, b, code, off) == PYD_OK;
}

/* Frame objects (<= 3.10): push the frame f; *next is what it awaits
 * (left alone if nothing). */
static enum pyd_err frame_object(struct tctx *c, uint64_t f,
				 struct pyd_frame_buf *out, uint64_t *next)
{
	const struct py_layout *L = c->L;
	const struct py_objects *o = &L->objects;
	uint8_t buf[FRAME_READ];
	if (tasks_rd(c, f, buf, sizeof buf))
		return PYD_E_READ;
	uint64_t code = pyd_u64_at(buf, (uint64_t)L->frame_object.f_code);
	int32_t lasti;
	memcpy(&lasti, buf + L->frame_object.f_lasti, sizeof lasti);
	int64_t off = pyd_lasti_offset(L, lasti);
	if (!push_at(out, c, code, off))
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
		if (state != L->frame_state.suspended || depth < 1 ||
		    depth > (1 << 20))
			return PYD_OK;
		top = pyd_u64_at(buf, (uint64_t)o->f_valuestack) +
		      8 * (uint64_t)(depth - 1);
	}
	/* In `await` / `yield from` when the next opcode is YIELD_FROM. */
	uint64_t co_code;
	uint8_t op;
	int64_t at = off + 2;
	if (pyd_read_ptr(c->s, code + (uint64_t)o->co_code, &co_code) ||
	    tasks_rd(c, co_code + (uint64_t)L->bytes.ob_sval + (uint64_t)at, &op,
		     1))
		return PYD_E_READ;
	if (op != o->yield_from_op)
		return PYD_OK;
	return pyd_read_ptr(c->s, top, next) ? PYD_E_READ : PYD_OK;
}

/*
 * Is the object at *coro a generator, whose frame the step reads next?
 * If not, *coro becomes what the chain goes on with: an asend / athrow
 * awaitable's async generator, else 0 (a Future, a plain iterator...
 * ends it), and *err says whether that could be read.
 */
static bool generator(struct tctx *c, uint64_t *coro, enum pyd_err *err)
{
	uint64_t obj = *coro;
	*err = PYD_OK;
	*coro = 0;
	switch (tasks_kind(c, obj)) {
	case KIND_GEN:
		*coro = obj;
		return true;
	case KIND_AWAITER:
		/* PyAsyncGenASend.ags_gen / AThrow.agt_gen: the first
		 * member after the object header */
		if (pyd_read_ptr(c->s, obj + pyd_obj_head(c->L), coro))
			*err = PYD_E_READ;
		return false;
	default:
		return false;
	}
}

/* One step from the object at *coro: push its frame if it has one, and
 * set *coro to what it awaits (0: nothing to follow). */
typedef enum pyd_err (*chain_step)(struct tctx *c, uint64_t *coro,
				   struct pyd_frame_buf *out);

static enum pyd_err step_frame_object(struct tctx *c, uint64_t *coro,
				      struct pyd_frame_buf *out)
{
	uint64_t gen = *coro, f;
	enum pyd_err err;
	if (!generator(c, coro, &err))
		return err;
	*coro = 0; /* unless its frame says what it awaits */
	if (pyd_read_ptr(c->s, gen + (uint64_t)c->L->objects.gi_frame, &f))
		return PYD_E_READ;
	return f ? frame_object(c, f, out, coro) : PYD_OK; /* 0: finished */
}

/* Embedded frames (3.11 - 3.13), suspended in `await` by frame state
 * (3.13) or by the RESUME after prev_instr (3.11, 3.12). */
static enum pyd_err step_stacktop(struct tctx *c, uint64_t *coro,
				  struct pyd_frame_buf *out)
{
	const struct py_layout *L = c->L;
	const struct py_objects *o = &L->objects;
	uint64_t gen = *coro;
	enum pyd_err err;
	if (!generator(c, coro, &err))
		return err;
	*coro = 0; /* unless its frame says what it awaits */
	uint8_t buf[256];
	size_t need = (size_t)(L->gen.gi_iframe + L->iframe.localsplus);
	if (need > sizeof buf || tasks_rd(c, gen, buf, need))
		return PYD_E_READ;
	int8_t state = (int8_t)buf[L->gen.gi_frame_state];
	if (state < L->frame_state.created || state > L->frame_state.executing)
		return PYD_OK; /* finished: no frame */
	const uint8_t *f = buf + L->gen.gi_iframe;
	uint64_t code = pyd_u64_at(f, (uint64_t)L->iframe.code);
	uint64_t instr = pyd_u64_at(f, (uint64_t)L->iframe.instr);
	if (!push_at(out, c, code, pyd_code_offset(c->s, code, instr)))
		return PYD_E_READ;
	if (state == L->frame_state.created || state == L->frame_state.executing)
		return PYD_OK;
	if (L->frame_state.yield_from) {
		if (state != L->frame_state.yield_from)
			return PYD_OK;
	} else {
		uint8_t unit[2];
		if (tasks_rd(c, instr + 2, unit, 2))
			return PYD_E_READ;
		if ((unit[0] != o->resume_ops[0] &&
		     unit[0] != o->resume_ops[1]) ||
		    unit[1] < 2)
			return PYD_OK;
	}
	int32_t stacktop;
	memcpy(&stacktop, f + o->if_stacktop, sizeof stacktop);
	if (stacktop < 1 || stacktop > (1 << 20))
		return PYD_E_READ;
	uint64_t slot = gen + need + 8 * (uint64_t)(stacktop - 1);
	return pyd_read_ptr(c->s, slot, coro) ? PYD_E_READ : PYD_OK;
}

/* Embedded frames with a stack pointer (3.14+).  One read of the object
 * serves its type, its frame and, usually, the awaited slot. */
static enum pyd_err step_stackpointer(struct tctx *c, uint64_t *coro,
				      struct pyd_frame_buf *out)
{
	const struct py_layout *L = c->L;
	const uint64_t tag = L->code_tag_mask;
	const size_t head = c->gen_size;
	uint64_t gen = *coro;
	uint8_t obj[GEN_READ];
	*coro = 0;
	if (head > sizeof obj)
		return PYD_E_READ;
	/* A small object at the end of a mapping: read what fits. */
	size_t got = read_obj(c, gen, obj, sizeof obj, head);
	if (!got)
		got = read_obj(c, gen, obj, (size_t)L->object.ob_type + 16,
			       (size_t)L->object.ob_type + 8);
	if (!got)
		return PYD_E_READ;
	switch (tasks_kind_of_type(c, pyd_u64_at(obj, (uint64_t)L->object.ob_type))) {
	case KIND_AWAITER:
		if (got < pyd_obj_head(L) + 8)
			return PYD_E_READ;
		*coro = pyd_u64_at(obj, pyd_obj_head(L));
		return PYD_OK;
	case KIND_GEN:
		break;
	default:
		return PYD_OK;
	}
	if (got < head)
		return PYD_E_READ;
	int8_t state = (int8_t)obj[L->gen.gi_frame_state];
	if (state < L->frame_state.created || state > L->frame_state.executing)
		return PYD_OK; /* finished: no frame */
	const uint8_t *f = obj + L->gen.gi_iframe;
	if (f[L->iframe.owner] != FRAME_OWNED_BY_GENERATOR)
		return PYD_E_READ;
	uint64_t code = pyd_u64_at(f, (uint64_t)L->iframe.code) & ~tag;
	uint64_t instr = pyd_u64_at(f, (uint64_t)L->iframe.instr);
	if (!push_at(out, c, code, pyd_code_offset(c->s, code, instr)))
		return PYD_E_READ;
	/* Running (its frames are on some thread's stack), suspended at a
	 * plain yield, or not started: it awaits nothing. */
	if (state < L->frame_state.yield_from ||
	    state >= L->frame_state.executing)
		return PYD_OK;
	uint64_t sp = pyd_u64_at(f, (uint64_t)L->iframe.stackpointer);
	uint64_t base = gen + head;
	uint64_t at = sp - 8 * (uint64_t)L->awaited_slot;
	if (sp < base + 8 * (uint64_t)L->awaited_slot ||
	    sp - base > (1u << 24))
		return PYD_E_READ;
	uint64_t ref;
	if (at + 8 <= gen + got)
		ref = pyd_u64_at(obj, at - gen);
	else if (tasks_rd(c, at, &ref, sizeof ref))
		return PYD_E_READ;
	*coro = ref & ~tag;
	return PYD_OK;
}

static chain_step frame_model(const struct py_layout *L)
{
	if (L->objects.gi_frame != PYD_NO_FIELD)
		return step_frame_object;
	return py_layout_has_tasks(L) ? step_stackpointer : step_stacktop;
}

enum pyd_err tasks_coro_chain(struct tctx *c, uint64_t coro,
			      struct pyd_frame_buf *out)
{
	chain_step step = frame_model(c->L);
	for (size_t depth = 0; coro; depth++) {
		if (depth >= MAX_CORO_DEPTH)
			return PYD_E_READ;
		enum pyd_err err = step(c, &coro, out);
		if (err)
			return err;
	}
	return PYD_OK;
}

/* ---- a running task's stack ------------------------------------------ */

/* The frame of a coroutine, as it appears on a thread's stack. */
static uint64_t coro_frame(struct tctx *c, uint64_t coro)
{
	const struct py_layout *L = c->L;
	uint64_t f = 0;
	if (L->objects.gi_frame != PYD_NO_FIELD)
		pyd_read_ptr(c->s, coro + (uint64_t)L->objects.gi_frame, &f);
	else
		f = coro + (uint64_t)L->gen.gi_iframe;
	return f;
}

enum pyd_err tasks_running_stack(struct tctx *c, uint64_t tstate,
				 uint64_t coro, struct pyd_frame_buf *out,
				 bool *found)
{
	const struct py_layout *L = c->L;
	uint64_t target = coro_frame(c, coro), f;
	uint8_t buf[FRAME_READ];
	*found = false;
	if (!target)
		return PYD_OK;
	enum pyd_err err =
		tasks_rd(c, tstate + (uint64_t)L->tstate.frame, &f, sizeof f);
	if (!err && L->frame_model == PY_FRAMES_CFRAME && f)
		err = tasks_rd(c, f + (uint64_t)L->cframe.current_frame, &f,
			       sizeof f);
	for (size_t steps = 0; !err && f && steps < PYD_MAX_FRAMES; steps++) {
		uint64_t code, prev;
		int64_t off;
		bool shim = false;
		if ((err = tasks_rd(c, f, buf, sizeof buf)))
			break;
		if (L->frame_model == PY_FRAMES_OBJECT) {
			int32_t lasti;
			code = pyd_u64_at(buf, (uint64_t)L->frame_object.f_code);
			prev = pyd_u64_at(buf, (uint64_t)L->frame_object.f_back);
			memcpy(&lasti, buf + L->frame_object.f_lasti,
			       sizeof lasti);
			off = pyd_lasti_offset(L, lasti);
		} else {
			code = pyd_u64_at(buf, (uint64_t)L->iframe.code) &
			       ~L->code_tag_mask;
			prev = pyd_u64_at(buf, (uint64_t)L->iframe.previous);
			off = pyd_code_offset(
				c->s, code, pyd_u64_at(buf, (uint64_t)L->iframe.instr));
			shim = L->owner_first_shim != PYD_NO_FIELD &&
			       buf[L->iframe.owner] >= L->owner_first_shim;
		}
		if (!shim && !push_at(out, c, code, off))
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

/* ---- names ----------------------------------------------------------- */

char *tasks_name(struct tctx *c, uint64_t obj)
{
	const struct py_layout *L = c->L;
	uint8_t buf[NAME_READ];
	size_t hdr = (size_t)L->object.ob_type + 8;
	size_t got = obj ? read_obj(c, obj, buf, sizeof buf, hdr) : 0;
	if (!got)
		return NULL;
	uint64_t flags = type_of(c, pyd_u64_at(buf, (uint64_t)L->object.ob_type))
				 .flags;
	if (flags & TPFLAGS_UNICODE_SUBCLASS) {
		char *s = pyd_short_ascii(L, buf, got);
		return s ? s : pyd_read_str(c->s, obj);
	}
	int64_t v;
	if (!(flags & TPFLAGS_LONG_SUBCLASS) ||
	    (!pyd_long_decode(L, buf, got, &v) && pyd_long_value(c->s, obj, &v)))
		return NULL;
	char *out = malloc(32);
	if (out)
		snprintf(out, 32, "Task-%lld", (long long)v);
	return out;
}
