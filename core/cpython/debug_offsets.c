/*
 * Reading CPython's own _Py_DebugOffsets block (3.13+).
 *
 * The block is a struct of uint64_t fields after an 8-byte cookie, the
 * version and a free-threaded flag.  Its members are grouped by the CPython
 * struct they describe, and each minor version inserted members in the
 * middle of groups (3.14: threads_main, stackpointer, co_tlbc, set_object;
 * 3.15: base_frame, err_stackitem, heap_type_object, ...).  So the position
 * of a member depends on the minor version, and the block does not describe
 * itself.  We therefore keep, per minor version, the ordered member list as
 * data (copied from `ptype /o struct _Py_DebugOffsets` of the real sid
 * builds, which match Include/internal/pycore_debug_offsets.h of 3.14/3.15
 * and pycore_runtime.h of 3.13) and look members up by name.
 *
 * The host and target are both x86-64 (little-endian), so uint64_t fields
 * are copied out as they are.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../memsrc/memsrc.h"
#include "debug_offsets.h"
#include "layout.h"

#define COOKIE "xdebugpy"
#define HEADER_SIZE 24 /* cookie[8], version, free_threaded */
#define FIELD_SIZE 8
/* No struct we read has a member this far in; anything past it means we
 * are reading the wrong bytes or the wrong member list. */
#define MAX_OFFSET (64 * 1024)
/* _PyRuntimeState is ~350 KiB in 3.15; a "size" past this is garbage. */
#define MAX_STRUCT_SIZE (16 * 1024 * 1024)
/* struct _gil_runtime_state is a few hundred bytes (mutex, cond vars). */
#define MAX_GIL_OFFSET 4096

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Every _Py_DebugOffsets member, in block order, with the first minor
 * version that publishes it (copied from `ptype /o struct _Py_DebugOffsets`
 * of the real sid builds, which match Include/internal/
 * pycore_debug_offsets.h of 3.14/3.15 and pycore_runtime.h of 3.13).
 * CPython only ever inserts members, so a version's block holds, in this
 * order, exactly the members whose version has come: one list for every
 * version, as CPython's own test_external_inspection reads it.
 */
#define DEBUG_OFFSETS_MEMBERS(X) \
	X(13, runtime_state, size) \
	X(13, runtime_state, finalizing) \
	X(13, runtime_state, interpreters_head) \
	X(13, interpreter_state, size) \
	X(13, interpreter_state, id) \
	X(13, interpreter_state, next) \
	X(13, interpreter_state, threads_head) \
	X(14, interpreter_state, threads_main) \
	X(13, interpreter_state, gc) \
	X(13, interpreter_state, imports_modules) \
	X(13, interpreter_state, sysdict) \
	X(13, interpreter_state, builtins) \
	X(13, interpreter_state, ceval_gil) \
	X(13, interpreter_state, gil_runtime_state) \
	X(13, interpreter_state, gil_runtime_state_enabled) \
	X(13, interpreter_state, gil_runtime_state_locked) \
	X(13, interpreter_state, gil_runtime_state_holder) \
	X(14, interpreter_state, code_object_generation) \
	X(14, interpreter_state, tlbc_generation) \
	X(13, thread_state, size) \
	X(13, thread_state, prev) \
	X(13, thread_state, next) \
	X(13, thread_state, interp) \
	X(13, thread_state, current_frame) \
	X(15, thread_state, base_frame) \
	X(15, thread_state, last_profiled_frame) \
	X(15, thread_state, last_profiled_frame_seq) \
	X(13, thread_state, thread_id) \
	X(13, thread_state, native_thread_id) \
	X(13, thread_state, datastack_chunk) \
	X(13, thread_state, status) \
	X(15, thread_state, holds_gil) \
	X(15, thread_state, gil_requested) \
	X(15, thread_state, current_exception) \
	X(15, thread_state, exc_state) \
	X(15, err_stackitem, exc_value) \
	X(13, interpreter_frame, size) \
	X(13, interpreter_frame, previous) \
	X(13, interpreter_frame, executable) \
	X(13, interpreter_frame, instr_ptr) \
	X(13, interpreter_frame, localsplus) \
	X(13, interpreter_frame, owner) \
	X(14, interpreter_frame, stackpointer) \
	X(14, interpreter_frame, tlbc_index) \
	X(13, code_object, size) \
	X(13, code_object, filename) \
	X(13, code_object, name) \
	X(13, code_object, qualname) \
	X(13, code_object, linetable) \
	X(13, code_object, firstlineno) \
	X(13, code_object, argcount) \
	X(13, code_object, localsplusnames) \
	X(13, code_object, localspluskinds) \
	X(13, code_object, co_code_adaptive) \
	X(14, code_object, co_tlbc) \
	X(13, pyobject, size) \
	X(13, pyobject, ob_type) \
	X(13, type_object, size) \
	X(13, type_object, tp_name) \
	X(13, type_object, tp_repr) \
	X(13, type_object, tp_flags) \
	X(15, type_object, tp_basicsize) \
	X(15, type_object, tp_dictoffset) \
	X(15, heap_type_object, size) \
	X(15, heap_type_object, ht_cached_keys) \
	X(13, tuple_object, size) \
	X(13, tuple_object, ob_item) \
	X(13, tuple_object, ob_size) \
	X(13, list_object, size) \
	X(13, list_object, ob_item) \
	X(13, list_object, ob_size) \
	X(14, set_object, size) \
	X(14, set_object, used) \
	X(14, set_object, table) \
	X(14, set_object, mask) \
	X(13, dict_object, size) \
	X(13, dict_object, ma_keys) \
	X(13, dict_object, ma_values) \
	X(13, float_object, size) \
	X(13, float_object, ob_fval) \
	X(13, long_object, size) \
	X(13, long_object, lv_tag) \
	X(13, long_object, ob_digit) \
	X(13, bytes_object, size) \
	X(13, bytes_object, ob_size) \
	X(13, bytes_object, ob_sval) \
	X(13, unicode_object, size) \
	X(13, unicode_object, state) \
	X(13, unicode_object, length) \
	X(13, unicode_object, asciiobject_size) \
	X(15, unicode_object, compactunicodeobject_size) \
	X(13, gc, size) \
	X(13, gc, collecting) \
	X(15, gc, frame) \
	X(15, gc, generation_stats_size) \
	X(15, gc, generation_stats) \
	X(14, gen_object, size) \
	X(14, gen_object, gi_name) \
	X(14, gen_object, gi_iframe) \
	X(14, gen_object, gi_frame_state) \
	X(14, llist_node, next) \
	X(14, llist_node, prev) \
	X(14, debugger_support, eval_breaker) \
	X(14, debugger_support, remote_debugger_support) \
	X(14, debugger_support, remote_debugging_enabled) \
	X(14, debugger_support, debugger_pending_call) \
	X(14, debugger_support, debugger_script_path) \
	X(14, debugger_support, debugger_script_path_size)

struct member {
	const char *name;
	int since; /* minor version */
};

static const struct member members_[] = {
#define MEMBER(since, group, field) { #group "." #field, since },
	DEBUG_OFFSETS_MEMBERS(MEMBER)
#undef MEMBER
};

/*
 * Per release: the member list (that of minor version `members`), and a
 * fact the block does not publish but the task decoder needs (see struct
 * py_layout): where a suspended frame keeps the object it awaits, checked
 * on live targets (stackpointer[-1] on 3.14, [-2] on 3.15 is the
 * coroutine's cr_await).  The enum _framestate values, not published
 * either, are the built-in table's (layouts.c), which the block's layout
 * starts from.  Alphas and betas still reshuffle the block, so a minor
 * version's list is trusted from its release candidates on (first_hex);
 * a pre-release whose block we have read is a row of its own: 3.15.0a0
 * (../shared/cpython-ft, main three weeks after 3.14 branched) has
 * 3.14's.
 */
struct block_format {
	int minor;
	uint32_t first_hex, last_hex; /* the PY_VERSION_HEX it covers */
	int members;
	int awaited_slot;
};

#define ANY_LATER 0xffffffffu

static const struct block_format formats[] = {
	{ 13, 0x030d00c0, ANY_LATER, 13, 0 },
	{ 14, 0x030e00c0, ANY_LATER, 14, 1 },
	{ 15, 0x030f00a0, 0x030f00a0, 14, 1 },
	{ 15, 0x030f00c0, ANY_LATER, 15, 2 },
};

/*
 * Where each member we use lands in struct py_layout, and how many bytes of
 * the target struct it covers, so that "offset + width <= struct size" can
 * be checked.  Width 0 marks a member that is itself a size (sizeof
 * PyASCIIObject): it may equal the struct size but not exceed it.
 */
struct published {
	const char *name;
	size_t dst;
	uint8_t width;
};

#define AT(f) offsetof(struct py_layout, f)

static const struct published published[] = {
	{ "runtime_state.interpreters_head", AT(runtime.interpreters_head), 8 },
	{ "interpreter_state.id", AT(interp.id), 8 },
	{ "interpreter_state.next", AT(interp.next), 8 },
	{ "interpreter_state.threads_head", AT(interp.tstate_head), 8 },
	{ "interpreter_state.ceval_gil", AT(interp.gil_ptr), 8 },
	{ "interpreter_state.imports_modules", AT(objects.interp_modules), 8 },
	{ "thread_state.next", AT(tstate.next), 8 },
	{ "thread_state.interp", AT(tstate.interp), 8 },
	{ "thread_state.current_frame", AT(tstate.frame), 8 },
	{ "thread_state.thread_id", AT(tstate.thread_id), 8 },
	{ "thread_state.native_thread_id", AT(tstate.native_thread_id), 8 },
	{ "thread_state.base_frame", AT(tstate.base_frame), 8 },
	{ "thread_state.datastack_chunk", AT(datastack.chunk), 8 },
	{ "thread_state.current_exception", AT(exc.raised), 8 },
	{ "interpreter_frame.previous", AT(iframe.previous), 8 },
	{ "interpreter_frame.executable", AT(iframe.code), 8 },
	{ "interpreter_frame.instr_ptr", AT(iframe.instr), 8 },
	{ "interpreter_frame.owner", AT(iframe.owner), 1 },
	/* free-threaded 3.14+ (the block publishes them for every build;
	 * only these builds' layouts read them) */
	{ "interpreter_frame.tlbc_index", AT(iframe.tlbc_index), 4 },
	{ "code_object.co_tlbc", AT(code.tlbc), 8 },
	{ "code_object.filename", AT(code.filename), 8 },
	{ "code_object.name", AT(code.name), 8 },
	{ "code_object.qualname", AT(code.qualname), 8 },
	{ "code_object.linetable", AT(code.linetable), 8 },
	{ "code_object.firstlineno", AT(code.firstlineno), 4 },
	{ "code_object.co_code_adaptive", AT(code.code_adaptive), 1 },
	{ "code_object.argcount", AT(vars.co_argcount), 4 },
	{ "code_object.localsplusnames", AT(vars.co_localsplusnames), 8 },
	{ "code_object.localspluskinds", AT(vars.co_localspluskinds), 8 },
	{ "float_object.ob_fval", AT(vars.ob_fval), 8 },
	{ "pyobject.ob_type", AT(object.ob_type), 8 },
	{ "type_object.tp_name", AT(object.tp_name), 8 },
	{ "bytes_object.ob_size", AT(bytes.ob_size), 8 },
	{ "bytes_object.ob_sval", AT(bytes.ob_sval), 1 },
	{ "unicode_object.state", AT(unicode.state), 4 },
	{ "unicode_object.length", AT(unicode.length), 8 },
	{ "unicode_object.asciiobject_size", AT(unicode.ascii_size), 0 },
	/* 3.15+ only; before that compact_size stays the built-in value. */
	{ "unicode_object.compactunicodeobject_size", AT(unicode.compact_size),
	  0 },
	/* Asyncio tasks (3.14+); see unpublished_task_fields(). */
	{ "type_object.tp_flags", AT(object.tp_flags), 8 },
	{ "interpreter_frame.stackpointer", AT(iframe.stackpointer), 8 },
	{ "interpreter_frame.localsplus", AT(iframe.localsplus), 8 },
	{ "gen_object.gi_iframe", AT(gen.gi_iframe), 8 },
	{ "gen_object.gi_frame_state", AT(gen.gi_frame_state), 1 },
	{ "llist_node.next", AT(llist.next), 8 },
	{ "long_object.lv_tag", AT(pylong.size), 8 },
	{ "long_object.ob_digit", AT(pylong.digit), 4 },
	{ "set_object.used", AT(set.used), 8 },
	{ "set_object.mask", AT(set.mask), 8 },
	{ "set_object.table", AT(set.table), 8 },
};

/* The members only the block gives (the built-in table has none): not
 * known unless the block publishes them.  The generator, int, set and
 * type members the table has too keep its values unless published. */
static void unpublished_task_fields(struct py_layout *l)
{
	l->iframe.stackpointer = PYD_NO_FIELD;
	l->llist.next = PYD_NO_FIELD;
	l->awaited_slot = 0;
}

/* Slots of a block's table of member names: a power of two, over twice
 * the members. */
#define NAME_SLOTS 1024

struct block {
	const uint8_t *raw;
	size_t len;
	const struct block_format *fmt;
	/* Per slot, a member of this version (+1; 0: empty), by the hash of
	 * its name; per member, its place in the block. */
	uint16_t name_slot[NAME_SLOTS];
	uint16_t place[COUNT(members_)];
};

static const struct block_format *format_for(uint64_t hex)
{
	int minor = (int)((hex >> 16) & 0xff);
	for (size_t i = 0; i < COUNT(formats); i++)
		if (formats[i].minor == minor && hex >= formats[i].first_hex &&
		    hex <= formats[i].last_hex)
			return &formats[i];
	return NULL;
}

/* A minor version's members as its releases publish them. */
static const struct block_format *release_format(int minor)
{
	return format_for((uint64_t)(3 << 24 | minor << 16 | 0xf0));
}

static size_t list_members(int members, const char **names, size_t max)
{
	size_t n = 0;
	for (size_t m = 0; m < COUNT(members_); m++) {
		if (members_[m].since > members)
			continue;
		if (n < max)
			names[n] = members_[m].name;
		n++;
	}
	return n;
}

size_t py_debug_offsets_members(int minor, const char **names, size_t max)
{
	const struct block_format *f = release_format(minor);
	return f ? list_members(f->members, names, max) : 0;
}

static size_t member_count(const struct block_format *f)
{
	return list_members(f->members, NULL, 0);
}

static size_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h & (NAME_SLOTS - 1);
}

/* The block's tables: a member is looked for by name a hundred times a
 * dump, and scanning the table for each was a sixth of its instructions. */
static void index_members(struct block *b)
{
	_Static_assert(COUNT(members_) * 2 < NAME_SLOTS, "too few name slots");
	uint16_t at = 0;
	memset(b->name_slot, 0, sizeof b->name_slot);
	for (size_t m = 0; m < COUNT(members_); m++) {
		if (members_[m].since > b->fmt->members)
			continue;
		b->place[m] = at++;
		size_t h = name_hash(members_[m].name);
		while (b->name_slot[h])
			h = (h + 1) & (NAME_SLOTS - 1);
		b->name_slot[h] = (uint16_t)(m + 1);
	}
}

/* Read a member by name; false if this version does not publish it (or,
 * defensively, if it lies past the bytes we were given). */
static bool get(const struct block *b, const char *name, uint64_t *v)
{
	for (size_t h = name_hash(name); b->name_slot[h];
	     h = (h + 1) & (NAME_SLOTS - 1)) {
		size_t m = b->name_slot[h] - 1u;
		if (strcmp(members_[m].name, name))
			continue;
		size_t at = HEADER_SIZE + (size_t)b->place[m] * FIELD_SIZE;
		if (at > b->len || b->len - at < FIELD_SIZE)
			return false;
		*v = pyd_u64_at(b->raw, at);
		return true;
	}
	return false;
}

/* The "size" member of the group `name` belongs to (the part before the
 * dot), i.e. sizeof the CPython struct that `name` is an offset into. */
static bool group_size(const struct block *b, const char *name, uint64_t *v)
{
	const char *dot = strchr(name, '.');
	char key[64];
	size_t n = dot ? (size_t)(dot - name) : 0;
	if (n == 0 || n + sizeof(".size") > sizeof(key))
		return false;
	memcpy(key, name, n);
	memcpy(key + n, ".size", sizeof(".size"));
	return get(b, key, v) && *v > 0 && *v <= MAX_STRUCT_SIZE;
}

static bool plausible(uint64_t v, uint8_t width, uint64_t size)
{
	if (width == 0)
		return v > 0 && v <= size;
	return v < MAX_OFFSET && v + width <= size;
}

static void store(struct py_layout *l, size_t dst, uint64_t v)
{
	int32_t x = (int32_t)v; /* plausible() bounded it well below 2^31 */
	memcpy((char *)l + dst, &x, sizeof(x));
}

/* Override every layout field the block publishes; -1 on a value that does
 * not fit the struct the block itself says it belongs to. */
static int apply_published(const struct block *b, struct py_layout *l)
{
	for (size_t i = 0; i < COUNT(published); i++) {
		const struct published *p = &published[i];
		uint64_t v, size;
		if (!get(b, p->name, &v))
			continue; /* not in this version: keep the built-in */
		/* struct llist_node (two pointers) publishes no size. */
		if (strncmp(p->name, "llist_node.", 11) == 0)
			size = 16;
		else if (!group_size(b, p->name, &size))
			return -1;
		if (!plausible(v, p->width, size))
			return -1;
		store(l, p->dst, v);
	}
	return 0;
}

/*
 * The block gives the GIL's locked/last_holder as offsets inside
 * PyInterpreterState (of the interpreter's own embedded _gil).  The decoder
 * follows interp->ceval.gil instead, which may point at the main
 * interpreter's _gil, so it needs them relative to the GIL struct.
 */
static int apply_gil(const struct block *b, struct py_layout *l)
{
	uint64_t base, locked, holder;
	if (!get(b, "interpreter_state.gil_runtime_state", &base) ||
	    !get(b, "interpreter_state.gil_runtime_state_locked", &locked) ||
	    !get(b, "interpreter_state.gil_runtime_state_holder", &holder))
		return -1;
	if (locked < base || holder < base || locked == holder ||
	    locked - base >= MAX_GIL_OFFSET || holder - base >= MAX_GIL_OFFSET)
		return -1;
	l->gil.locked = (int32_t)(locked - base);
	l->gil.last_holder = (int32_t)(holder - base);
	return 0;
}

/*
 * Fields the block gives in two parts: a struct embedded in another, and
 * a member of it.  The interpreter's gc.collecting (3.13+) and the
 * thread's exc_state.exc_value (3.15+); where a part is not published,
 * the built-in value stays.
 */
static int apply_embedded(const struct block *b, struct py_layout *l)
{
	uint64_t at, in, size, isize;
	if (get(b, "interpreter_state.gc", &at) &&
	    get(b, "gc.collecting", &in)) {
		if (!group_size(b, "interpreter_state.gc", &size) ||
		    !group_size(b, "gc.collecting", &isize) ||
		    !plausible(in, 4, isize) || !plausible(at, 0, size) ||
		    at + isize > size)
			return -1;
		l->interp.gc_collecting = (int32_t)(at + in);
	}
	if (get(b, "thread_state.exc_state", &at) &&
	    get(b, "err_stackitem.exc_value", &in)) {
		if (!group_size(b, "thread_state.exc_state", &size) ||
		    in >= MAX_OFFSET || !plausible(at + in, 8, size))
			return -1;
		l->exc.handled = (int32_t)(at + in);
	}
	return 0;
}

static bool distinct(const int32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (v[i] == v[j])
				return false;
	return true;
}

/* Offsets into PyObject-headed structs lie past the header, in the order
 * every version has them. */
static bool objects_consistent(const struct py_layout *l, int32_t head)
{
	return l->object.ob_type > 0 && l->object.ob_type + 8 <= head &&
	       l->object.tp_name >= head + 8 && /* after PyVarObject */
	       l->bytes.ob_size >= head &&
	       l->bytes.ob_sval > l->bytes.ob_size &&
	       l->unicode.length >= head &&
	       l->unicode.state > l->unicode.length &&
	       l->unicode.ascii_size > l->unicode.state &&
	       l->unicode.compact_size > l->unicode.ascii_size &&
	       l->code.filename >= head && l->code.name >= head &&
	       l->code.qualname >= head && l->code.firstlineno >= head &&
	       l->code.linetable >= head && l->code.code_adaptive >= head;
}

/*
 * Cross-member invariants that hold for every GIL build on a 64-bit target.
 * A member list that is off for this version (a mid-struct insertion we do
 * not know about) or a corrupted block yields offsets that each fit their
 * struct but break these, so this is the guard against parsing the block
 * with the wrong member list.  `block_size` is sizeof(_Py_DebugOffsets).
 */
static bool consistent(const struct py_layout *l, int32_t head,
		       size_t block_size)
{
	/* PyThreadState starts with prev, and (3.13+) PyInterpreterState
	 * with ceval, _PyInterpreterFrame with f_executable: none of the
	 * other members we read can be at 0, and no two can share a place. */
	const int32_t is[] = { 0, l->interp.id, l->interp.next,
			       l->interp.tstate_head, l->interp.gil_ptr };
	const int32_t ts[] = { 0, l->tstate.next, l->tstate.interp,
			       l->tstate.frame, l->tstate.thread_id,
			       l->tstate.native_thread_id };
	const int32_t fr[] = { l->iframe.code, l->iframe.previous,
			       l->iframe.instr, l->iframe.owner };
	const int32_t co[] = { l->code.filename, l->code.name,
			       l->code.qualname, l->code.firstlineno,
			       l->code.linetable, l->code.code_adaptive };
	/* The block is _PyRuntime's first member, so the interpreter list
	 * must come after it. */
	return (size_t)l->runtime.interpreters_head >= block_size &&
	       distinct(is, COUNT(is)) && distinct(ts, COUNT(ts)) &&
	       distinct(fr, COUNT(fr)) && distinct(co, COUNT(co)) &&
	       objects_consistent(l, head);
}

bool py_layout_has_tasks(const struct py_layout *l)
{
	/* The built-in table leaves these 0, the block PYD_NO_FIELD when it
	 * does not publish them; none of them is 0 in a real layout except
	 * llist_node.next (the node's first member). */
	const int32_t v[] = { l->object.tp_flags, l->iframe.stackpointer,
			      l->iframe.localsplus, l->gen.gi_iframe,
			      l->gen.gi_frame_state, l->pylong.size,
			      l->pylong.digit, l->set.used, l->set.mask,
			      l->set.table };
	for (size_t i = 0; i < COUNT(v); i++)
		if (v[i] <= 0)
			return false;
	return l->llist.next >= 0 && l->frame_state.valid &&
	       l->awaited_slot > 0 && l->gen.gi_frame_state < l->gen.gi_iframe &&
	       l->pylong.size < l->pylong.digit &&
	       l->iframe.stackpointer < l->iframe.localsplus;
}

/* Check the fixed header: the cookie, a CPython 3 version (returned in
 * *hex) and whether the build is free-threaded. */
static int parse_header(const uint8_t *raw, size_t len, uint64_t *hex,
			bool *free_threaded)
{
	if (len < HEADER_SIZE || memcmp(raw, COOKIE, 8) != 0)
		return -1;
	*hex = pyd_u64_at(raw, 8);
	uint64_t ft = pyd_u64_at(raw, 16);
	if ((*hex >> 24) != 3 || *hex > 0xffffffffu || ft > 1)
		return -1;
	*free_threaded = ft != 0;
	return 0;
}

int py_debug_offsets_header(const uint8_t *raw, size_t len, uint64_t *hex,
			    bool *free_threaded)
{
	return raw ? parse_header(raw, len, hex, free_threaded) : -1;
}

int py_layout_from_debug_offsets(const uint8_t *raw, size_t len,
				 bool debug_build, struct py_layout *out,
				 uint64_t *version_hex)
{
	uint64_t head, hex;
	bool ft;
	if (!raw || !out || parse_header(raw, len, &hex, &ft))
		return -1;
	if (version_hex)
		*version_hex = hex;
	struct block b = { .raw = raw, .len = len, .fmt = format_for(hex) };
	/* Unknown release (3.12 has no block; 3.16+ or a pre-release:
	 * unknown member order). */
	if (!b.fmt || len - HEADER_SIZE < member_count(b.fmt) * FIELD_SIZE)
		return -1;
	index_members(&b);
	struct py_build build = { (uint32_t)hex, debug_build, ft };
	const struct py_layout *base = py_layout_builtin(&build);
	if (!base)
		return -1;
	struct py_layout l = *base;
	unpublished_task_fields(&l);
	l.awaited_slot = b.fmt->awaited_slot;
	if (apply_published(&b, &l) || apply_gil(&b, &l) ||
	    apply_embedded(&b, &l) ||
	    !get(&b, "pyobject.size", &head) || head > MAX_OFFSET ||
	    !consistent(&l, (int32_t)head,
			HEADER_SIZE + member_count(b.fmt) * FIELD_SIZE))
		return -1;
	*out = l;
	return 0;
}
