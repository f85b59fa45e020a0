/*
 * The code-object cache: what a frame's code object says (names, file,
 * line table), read once per address and kept in the session; the lines
 * it gives; and the frames the decoders push from it.  It reads objects
 * through objects.c, above which it sits.
 */
#include "code.h"

#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "linetable.h"
#include "objects.h"

/* Line tables longer than this are not a real code object's. */
#define MAX_LINETABLE (1u << 20)
/* Far more distinct code objects than any program runs; past it we stop
 * caching rather than grow without bound. */
#define MAX_CACHED_CODES (1u << 20)
/* Thread-local copies of one code object's bytecode we look through: one
 * per thread index in use (free-threaded 3.14+). */
#define PYD_MAX_TLBC 65536

/*
 * Is type (an object's ob_type) PyCode_Type?  By address when the binary
 * told us; else by name, which lives in .rodata -- a part of the binary a
 * core leaves out.  With no binary at all (3.13+ found by its cookie) the
 * type is recognised by its shape: a code object is variable-sized, with
 * tp_basicsize = offsetof(co_code_adaptive) and tp_itemsize = 2 (one code
 * unit).  tp_basicsize and tp_itemsize follow tp_name in every 3.x.
 */
static bool is_code_type(struct pyd_session *s, uint64_t type)
{
	const struct py_layout *L = &s->layout;
	uint64_t name, size[2];
	char tname[8] = {0};
	if (s->rt.code_type_addr)
		return type == s->rt.code_type_addr;
	if (!type || pyd_read_ptr(s, type + (uint64_t)L->object.tp_name, &name))
		return false;
	if (pyd_read(s->src, name, tname, 5) == PYD_OK)
		return strcmp(tname, "code") == 0;
	return L->code.code_adaptive != PYD_NO_FIELD &&
	       !pyd_read(s->src, type + (uint64_t)L->object.tp_name + 8, size,
			 sizeof size) &&
	       size[0] == (uint64_t)L->code.code_adaptive && size[1] == 2;
}

static bool is_code(struct pyd_session *s, uint64_t addr)
{
	uint64_t type;
	if (pyd_read_ptr(s, addr + (uint64_t)s->layout.object.ob_type, &type))
		return false;
	if (type == s->code_type)
		return true;
	if (s->code_type || !is_code_type(s, type))
		return false;
	s->code_type = type;
	return true;
}

static struct pyd_code *code_read(struct pyd_session *s, uint64_t addr)
{
	const struct py_layout *L = &s->layout;
	int32_t offs[] = {L->code.filename,    L->code.name,
			  L->code.qualname,    L->code.firstlineno,
			  L->code.linetable,   L->datastack.framesize,
			  L->vars.co_flags,    L->object.ob_type + 8};
	int32_t end = 0;
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++)
		if (offs[i] + 8 > end)
			end = offs[i] + 8;
	int32_t all = L->code.firsttraceable + 4 > end
			      ? L->code.firsttraceable + 4
			      : end;
	uint8_t buf[512];
	if (all > (int32_t)sizeof buf || !is_code(s, addr))
		return NULL;
	/* A snapshot from an older release kept the header up to end. */
	bool whole = !pyd_read(s->src, addr, buf, (size_t)all);
	if (!whole && pyd_read(s->src, addr, buf, (size_t)end))
		return NULL;
	struct pyd_code *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->addr = addr;
	int32_t first;
	memcpy(&first, buf + L->code.firstlineno, sizeof first);
	c->firstlineno = first;
	if (L->vars.co_flags != PYD_NO_FIELD)
		memcpy(&c->flags, buf + L->vars.co_flags, sizeof c->flags);
	if (whole && L->code.firsttraceable != PYD_NO_FIELD) {
		int32_t units;
		memcpy(&units, buf + L->code.firsttraceable, sizeof units);
		c->traceable_from = 2 * units; /* 2-byte code units */
	}
	if (L->datastack.framesize != PYD_NO_FIELD)
		memcpy(&c->framesize, buf + L->datastack.framesize,
		       sizeof c->framesize);
	/* PyVarObject's ob_size follows ob_type: the code units */
	c->code_bytes = 2 * pyd_u64_at(buf, L->object.ob_type + 8);
	c->name_ptr = pyd_u64_at(buf, L->code.name);
	c->file_ptr = pyd_u64_at(buf, L->code.filename);
	c->linetable_ptr = pyd_u64_at(buf, L->code.linetable);
	c->name = pyd_read_str_mark(s, c->name_ptr, &c->name_mark);
	c->file = pyd_read_str_mark(s, c->file_ptr, &c->file_mark);
	if (L->code.qualname != PYD_NO_FIELD) {
		c->qualname_ptr = pyd_u64_at(buf, L->code.qualname);
		c->qualname = pyd_read_str(s, c->qualname_ptr);
	}
	c->linetable = pyd_read_bytes(s, c->linetable_ptr, MAX_LINETABLE,
				      &c->linetable_len);
	/* A dry run's misses are no part of the object: one read in part
	 * then is read again, whole, the next time. */
	bool part = !whole || (c->qualname_ptr && !c->qualname) ||
		    (c->linetable_ptr && !c->linetable);
	if (!c->name || !c->file || (s->dry && part)) {
		pyd_code_free(c);
		return NULL;
	}
	c->shim = !strcmp(c->file, "<shim>");
	return c;
}

static size_t code_home(const struct pyd_session *s, uint64_t addr)
{
	return (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ULL) &
	       (s->codes_cap - 1);
}

static size_t code_slot(const struct pyd_session *s, uint64_t addr)
{
	size_t mask = s->codes_cap - 1, i = code_home(s, addr);
	while (s->codes[i] && s->codes[i]->addr != addr)
		i = (i + 1) & mask;
	return i;
}

static bool codes_grow(struct pyd_session *s)
{
	size_t cap = s->codes_cap ? s->codes_cap * 2 : 1024;
	struct pyd_code **old = s->codes;
	size_t oldcap = s->codes_cap;
	s->codes = calloc(cap, sizeof *s->codes);
	if (!s->codes) {
		s->codes = old;
		return false;
	}
	s->codes_cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			s->codes[code_slot(s, old[i]->addr)] = old[i];
	free(old);
	return true;
}

/* c was looked up in this check window: pyd_code_take_used() lists it.
 * Out of memory it is not listed, and not checked this time. */
static void note_used(struct pyd_session *s, struct pyd_code *c)
{
	if (pyd_grow((void **)&s->used, &s->used_cap, s->nused + 1,
		     sizeof *s->used)) {
		s->used[s->nused++] = c;
		c->window = s->window;
	}
}

/* Whether a dry run tried code object addr in this pass already; if
 * not, it is noted as tried.  An address looks in DRY_PROBE slots from
 * its hash's; with none of them its own or free (noted in an earlier
 * pass), it is tried again. */
#define DRY_PROBE 4
static bool dry_tried(struct pyd_session *s, uint64_t addr)
{
	size_t n = sizeof s->dry_tried / sizeof *s->dry_tried;
	size_t h = (size_t)(((addr >> 4) * 0x9E3779B97F4A7C15ULL) >> 32);
	struct pyd_dry_tried *free_slot = NULL;
	for (size_t i = 0; i < DRY_PROBE; i++) {
		struct pyd_dry_tried *e = &s->dry_tried[(h + i) & (n - 1)];
		if (e->pass != s->dry_pass) {
			if (!free_slot)
				free_slot = e;
		} else if (e->addr == addr) {
			return true;
		}
	}
	if (free_slot)
		*free_slot = (struct pyd_dry_tried){addr, s->dry_pass};
	return false;
}

static struct pyd_code *code_get(struct pyd_session *s, uint64_t addr)
{
	if (!addr)
		return NULL;
	if (s->codes_cap) {
		struct pyd_code *hit = s->codes[code_slot(s, addr)];
		if (hit && hit->window != s->window)
			note_used(s, hit);
		if (hit)
			return hit;
	}
	/* Frames point into cached entries, so a full cache cannot evict:
	 * past the cap new code objects are simply not decoded. */
	if (s->ncodes >= MAX_CACHED_CODES)
		return NULL;
	/* A dry run reads a code object once a pass: read whole, it is
	 * cached; read in part, the batch has the rest next pass. */
	if (s->dry && dry_tried(s, addr)) {
		s->dry_skipped++;
		return NULL;
	}
	struct pyd_code *c = code_read(s, addr);
	if (!c)
		return NULL;
	if ((s->ncodes + 1) * 2 > s->codes_cap && !codes_grow(s)) {
		pyd_code_free(c);
		return NULL;
	}
	s->codes[code_slot(s, addr)] = c;
	s->ncodes++;
	note_used(s, c);
	return c;
}

const struct pyd_code *pyd_code_get(struct pyd_session *s, uint64_t addr)
{
	return code_get(s, addr);
}

/* Read code object c's co_tlbc array again into c->tlbc (free-threaded
 * 3.14+); false if it cannot be read. */
static bool tlbc_reread(struct pyd_session *s, struct pyd_code *c)
{
	uint64_t arr, n;
	if (pyd_read_ptr(s, c->addr + (uint64_t)s->layout.code.tlbc, &arr) ||
	    !arr || pyd_read_ptr(s, arr, &n) || n == 0 || n > PYD_MAX_TLBC)
		return false;
	uint64_t *v = realloc(c->tlbc, n * sizeof *v);
	if (!v)
		return false;
	c->tlbc = v;
	c->ntlbc = 0;
	if (pyd_read(s->src, arr + 8, v, n * sizeof *v))
		return false;
	c->ntlbc = (size_t)n;
	return true;
}

/* The copy of c's bytecode among its thread-local ones (c->tlbc) that
 * holds instr; 0 if none does. */
static uint64_t tlbc_find(const struct pyd_code *c, uint64_t instr)
{
	for (size_t i = 0; i < c->ntlbc; i++)
		if (c->tlbc[i] && instr >= c->tlbc[i] &&
		    instr - c->tlbc[i] < c->code_bytes)
			return c->tlbc[i];
	return 0;
}

/* pyd_code_offset, c the code object at code (NULL: not one, or not
 * looked up where no build has thread-local copies). */
static int64_t code_offset(struct pyd_session *s, struct pyd_code *c,
			   uint64_t code, uint64_t instr)
{
	const struct py_layout *L = &s->layout;
	uint64_t base = code + (uint64_t)L->code.code_adaptive;
	/* Free-threaded 3.14+: a thread that specialized the code runs its
	 * own copy; the one that holds instr is the frame's (the frame's
	 * tlbc_index names it too, but only through the same array).
	 * Copies live as long as their thread uses them, so the array is
	 * read again only when no copy known holds instr. */
	if (L->code.tlbc == PYD_NO_FIELD || !c || instr - base < c->code_bytes)
		return (int64_t)(instr - base);
	uint64_t copy = tlbc_find(c, instr);
	if (!copy && tlbc_reread(s, c))
		copy = tlbc_find(c, instr);
	return (int64_t)(instr - (copy ? copy : base));
}

int64_t pyd_code_offset(struct pyd_session *s, uint64_t code, uint64_t instr)
{
	bool copies = s->layout.code.tlbc != PYD_NO_FIELD;
	return code_offset(s, copies ? code_get(s, code) : NULL, code, instr);
}

const struct pyd_code *pyd_code_get_at(struct pyd_session *s, uint64_t code,
				       uint64_t instr, int64_t *off)
{
	struct pyd_code *c = code_get(s, code);
	*off = code_offset(s, c, code, instr);
	return c;
}

int pyd_code_line(const struct pyd_session *s, const struct pyd_code *c,
		  int offset)
{
	const uint8_t *t = c->linetable;
	size_t n = c->linetable_len;
	switch (s->layout.line_model) {
	case PY_LINES_LNOTAB:
		return pyd_line_lnotab(t, n, c->firstlineno, offset);
	case PY_LINES_310:
		return pyd_line_310(t, n, c->firstlineno, offset);
	case PY_LINES_LOCATIONS:
		return pyd_line_locations(t, n, c->firstlineno, offset);
	}
	return -1;
}

int pyd_code_line_cached(struct pyd_session *s, const struct pyd_code *c,
			 int offset)
{
	uint64_t h = ((c->addr >> 4) ^ ((uint64_t)offset << 32)) *
		     0x9E3779B97F4A7C15ULL;
	struct pyd_line_slot *e = &s->lines[h >> 52];
	if (e->code != c->addr || e->off != offset) {
		e->code = c->addr;
		e->off = offset;
		e->line = pyd_code_line(s, c, offset);
	}
	return e->line;
}

/* The header's bytes a check compares: up to its last pointer's end. */
static size_t header_len(const struct py_layout *L)
{
	const int32_t offs[] = {L->object.ob_type, L->code.name,
				L->code.qualname,  L->code.filename,
				L->code.firstlineno, L->code.linetable};
	int32_t end = 0;
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++)
		if (offs[i] != PYD_NO_FIELD && offs[i] + 8 > end)
			end = offs[i] + 8;
	return (size_t)end;
}

size_t pyd_code_check_size(const struct py_layout *L)
{
	return header_len(L) + 2 * pyd_str_mark_span(L);
}

void pyd_code_check_reads(const struct pyd_session *s,
			  const struct pyd_code *c,
			  struct pyd_code_read r[PYD_CODE_CHECK_READS])
{
	const struct py_layout *L = &s->layout;
	size_t hdr = header_len(L), span = pyd_str_mark_span(L);
	uint64_t len = (uint64_t)L->unicode.length;
	r[0] = (struct pyd_code_read){c->addr, 0, hdr};
	r[1] = (struct pyd_code_read){c->name_ptr + len, hdr,
				      c->name_mark.span};
	r[2] = (struct pyd_code_read){c->file_ptr + len, hdr + span,
				      c->file_mark.span};
}

/* Does buf, what pyd_code_check_reads() read now, still hold what we
 * decoded at c->addr? */
static bool same_code(const struct pyd_session *s, const struct pyd_code *c,
		      const uint8_t *buf)
{
	const struct py_layout *L = &s->layout;
	size_t hdr = header_len(L), span = pyd_str_mark_span(L);
	int32_t first;
	memcpy(&first, buf + L->code.firstlineno, sizeof first);
	return pyd_u64_at(buf, L->object.ob_type) == s->code_type &&
	       pyd_u64_at(buf, L->code.name) == c->name_ptr &&
	       (L->code.qualname == PYD_NO_FIELD ||
		pyd_u64_at(buf, L->code.qualname) == c->qualname_ptr) &&
	       pyd_u64_at(buf, L->code.filename) == c->file_ptr &&
	       pyd_u64_at(buf, L->code.linetable) == c->linetable_ptr &&
	       first == c->firstlineno &&
	       pyd_str_mark_holds(&c->name_mark, buf + hdr) &&
	       pyd_str_mark_holds(&c->file_mark, buf + hdr + span);
}

size_t pyd_code_take_used(struct pyd_session *s, struct pyd_code ***v,
			  size_t *cap)
{
	struct pyd_code **mine = *v;
	size_t mine_cap = *cap, n = s->nused;
	*v = s->used;
	*cap = s->used_cap;
	s->used = mine;
	s->used_cap = mine_cap;
	s->nused = 0;
	s->window = s->window == UINT32_MAX ? 1 : s->window + 1;
	return n;
}

/* Take c out of the table: linear probing moves each later entry of its
 * run back into the hole unless its home slot lies after the hole. */
static void code_remove(struct pyd_session *s, const struct pyd_code *c)
{
	size_t mask = s->codes_cap - 1, hole = code_slot(s, c->addr);
	s->codes[hole] = NULL;
	for (size_t j = (hole + 1) & mask; s->codes[j]; j = (j + 1) & mask) {
		size_t home = code_home(s, s->codes[j]->addr);
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			s->codes[hole] = s->codes[j];
			s->codes[j] = NULL;
			hole = j;
		}
	}
	s->ncodes--;
}

size_t pyd_code_recheck(struct pyd_session *s, struct pyd_code *const *v,
			size_t n, const uint8_t *hdrs)
{
	size_t len = pyd_code_check_size(&s->layout), changed = 0;
	for (size_t i = 0; i < n; i++) {
		if (same_code(s, v[i], hdrs + i * len))
			continue;
		code_remove(s, v[i]);
		pyd_code_free(v[i]);
		changed++;
	}
	if (changed)
		memset(s->lines, 0, PYD_LINE_CACHE * sizeof *s->lines);
	return changed;
}

bool pyd_frame_push(struct pyd_frame_buf *b, const struct pyd_code *c,
		    int line)
{
	if (b->n == b->cap) {
		/* Small at first: a task graph holds one buffer per task, most
		 * of them a frame or two deep (64 frames each made 10,000
		 * tasks fault in 40 MB). */
		size_t cap = b->cap ? b->cap * 2 : 4;
		void *p = realloc(b->v, cap * sizeof *b->v);
		if (!p)
			return false;
		b->v = p;
		b->cap = cap;
	}
	b->v[b->n++] = (struct pyd_frame){
		.code = c->addr,
		.function = c->name,
		.qualname = c->qualname,
		.file = c->file,
		.line = line,
		.firstline = c->firstlineno,
		.generator = (c->flags & PYD_CO_GENERATOR_KINDS) != 0,
	};
	return true;
}

/* Append the frame of code object c at byte offset off. */
static enum pyd_err push_code(struct pyd_session *s, struct pyd_frame_buf *b,
			      const struct pyd_code *c, int64_t off)
{
	/* -2 is "not started yet" (3.11's prev_instr before the code). */
	int line = off >= -2 && off <= INT32_MAX
			   ? pyd_code_line_cached(s, c, (int)off)
			   : -1;
	return pyd_frame_push(b, c, line) ? PYD_OK : PYD_E_NOMEM;
}

enum pyd_err pyd_frame_push_at(struct pyd_session *s, struct pyd_frame_buf *b,
			       uint64_t code, int64_t off)
{
	const struct pyd_code *c = pyd_code_get(s, code);
	return c ? push_code(s, b, c, off) : PYD_E_READ;
}

enum pyd_err pyd_frame_push_iframe(struct pyd_session *s,
				   struct pyd_frame_buf *b,
				   const struct pyd_code *c, int64_t off)
{
	if (!c || off > INT32_MAX || off < -2)
		return PYD_E_READ;
	return push_code(s, b, c, off);
}
