/*
 * The variables of a frame (pyd_dump_locals, pyd_frame_lookup).
 *
 * Names come from the code object, values from the frame's slots:
 *  - <= 3.10: co_varnames name the first co_nlocals slots of
 *    f_localsplus, then one cell per co_cellvars and co_freevars name.  A
 *    cell variable that is also an argument keeps its argument's place;
 *    its value is in its cell (the argument's slot is cleared).
 *  - 3.11+: co_localsplusnames name every slot at iframe.localsplus and
 *    co_localspluskinds say what each is: CO_FAST_LOCAL, _CELL or _FREE
 *    (a cell), _HIDDEN (an inlined comprehension's variable, which
 *    Python's own f_locals does not show either).  3.14+ slots are
 *    tagged stack references.
 * Arguments are the first co_argcount + co_kwonlyargcount names, then
 * *args and **kwargs where CO_VARARGS / CO_VARKEYWORDS say so.
 *
 * Every read of a dump's locals goes through a budget (a memory source
 * wrapped around the session's, with a page cache behind it), and so
 * does the text rendered, so a corrupt heap costs at most
 * PYD_LOCALS_MAX_READS reads of PYD_LOCALS_MAX_BYTES bytes and renders at
 * most PYD_LOCALS_MAX_TEXT bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "../memsrc/budget.h"
#include "../grow.h"
#include "../memsrc/pagecache.h"
#include "code.h"
#include "objects.h"
#include "repr.h"
#include "session.h"

#define CO_VARARGS 0x4
#define CO_VARKEYWORDS 0x8
/* _PyFastLocalKind, the same bits 3.11 - 3.15. */
#define CO_FAST_HIDDEN 0x10
#define CO_FAST_CELL 0x40
#define CO_FAST_FREE 0x80
/* More variables than a code object can have (its oparg is 8 bits,
 * EXTENDED_ARG makes 32, but the compiler stops far below). */
#define MAX_VARS (1u << 16)
/* Pages the locals pass keeps (1 MiB). */
#define CACHED_PAGES 256
/* 3.14+ stack references: the low bits are tags; both set is a tagged
 * int (PyStackRef_TagInt), not a pointer. */
#define TAG_INT 3

/* ---- the names ------------------------------------------------------ */

/* The strs of a tuple of names (malloc'd array of n malloc'd strs). */
static enum pyd_err names_of(struct pyd_session *s, uint64_t tuple,
			     char ***names, size_t *n)
{
	uint64_t *items;
	*names = NULL;
	enum pyd_err err = pyd_seq_items(s, tuple, false, MAX_VARS, &items, n,
					 NULL);
	if (err)
		return err;
	*names = calloc(*n ? *n : 1, sizeof **names);
	for (size_t i = 0; *names && i < *n; i++)
		if (!((*names)[i] = pyd_read_str(s, items[i])))
			err = PYD_E_READ;
	free(items);
	return *names ? err : PYD_E_NOMEM;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

static bool add_var(struct pyd_code *c, char *name, size_t slot,
		    uint8_t flags)
{
	if (!pyd_grow_one((void **)&c->vars, c->nvars, sizeof *c->vars))
		return false;
	c->vars[c->nvars++] =
		(struct pyd_code_var){name, (uint32_t)slot, flags};
	if (slot + 1 > c->nslots)
		c->nslots = slot + 1;
	return true;
}

struct code_ints {
	int32_t argc, kwonly, flags, nlocals;
};

static size_t nargs_of(const struct code_ints *ci)
{
	return (size_t)ci->argc + (size_t)ci->kwonly +
	       !!(ci->flags & CO_VARARGS) + !!(ci->flags & CO_VARKEYWORDS);
}

/* <= 3.10: varnames, then the cells not already named as arguments,
 * then the free variables. */
static enum pyd_err vars_310(struct pyd_session *s, struct pyd_code *c,
			     const uint8_t *hdr, const struct code_ints *ci)
{
	const struct py_layout *L = &s->layout;
	char **names[3] = {0};
	size_t n[3] = {0};
	const int32_t at[3] = {L->vars.co_varnames, L->vars.co_cellvars,
			       L->vars.co_freevars};
	enum pyd_err err = PYD_OK;
	for (int k = 0; k < 3 && !err; k++)
		err = names_of(s, pyd_u64_at(hdr, at[k]), &names[k], &n[k]);
	size_t nargs = nargs_of(ci);
	if (!err && ((size_t)ci->nlocals != n[0] || nargs > n[0]))
		err = PYD_E_READ;
	for (size_t i = 0; !err && i < n[0]; i++) {
		if (!add_var(c, names[0][i], i, i < nargs ? PYD_VAR_ARG : 0))
			err = PYD_E_NOMEM;
		else
			names[0][i] = NULL;
	}
	for (size_t j = 0; !err && j < n[1] + n[2]; j++) {
		char **name = j < n[1] ? &names[1][j] : &names[2][j - n[1]];
		size_t slot = n[0] + j, i;
		for (i = 0; j < n[1] && i < nargs; i++)
			if (!strcmp(c->vars[i].name, *name))
				break;
		if (j < n[1] && i < nargs) {
			c->vars[i].slot = (uint32_t)slot;
			c->vars[i].flags |= PYD_VAR_CELL;
			if (slot + 1 > c->nslots)
				c->nslots = slot + 1;
		} else if (!add_var(c, *name, slot, PYD_VAR_CELL)) {
			err = PYD_E_NOMEM;
		} else {
			*name = NULL;
		}
	}
	for (int k = 0; k < 3; k++)
		free_names(names[k], n[k]);
	return err;
}

/* 3.11+: one tuple of names, one bytes of kinds. */
static enum pyd_err vars_311(struct pyd_session *s, struct pyd_code *c,
			     const uint8_t *hdr, const struct code_ints *ci)
{
	const struct py_layout *L = &s->layout;
	char **names;
	size_t n, nkinds;
	uint8_t *kinds = NULL;
	enum pyd_err err = names_of(s, pyd_u64_at(hdr, L->vars.co_localsplusnames),
				    &names, &n);
	if (!err && !(kinds = pyd_read_bytes(s, pyd_u64_at(hdr, L->vars.co_localspluskinds),
					     MAX_VARS, &nkinds)))
		err = PYD_E_READ;
	size_t nargs = nargs_of(ci);
	if (!err && (nkinds != n || nargs > n))
		err = PYD_E_READ;
	for (size_t i = 0; !err && i < n; i++) {
		if (kinds[i] & CO_FAST_HIDDEN)
			continue;
		uint8_t flags = i < nargs ? PYD_VAR_ARG : 0;
		if (kinds[i] & (CO_FAST_CELL | CO_FAST_FREE))
			flags |= PYD_VAR_CELL;
		if (!add_var(c, names[i], i, flags))
			err = PYD_E_NOMEM;
		else
			names[i] = NULL;
	}
	free(kinds);
	free_names(names, n);
	return err;
}

/* The variables of the code object c, read once and kept with it (a code
 * object never changes). */
static enum pyd_err code_vars(struct pyd_session *s, struct pyd_code *c)
{
	const struct py_layout *L = &s->layout;
	if (c->vars_state)
		return c->vars_state > 0 ? PYD_OK : PYD_E_READ;
	const int32_t offs[] = {L->vars.co_argcount, L->vars.co_kwonlyargcount,
				L->vars.co_nlocals,
				L->vars.co_varnames, L->vars.co_cellvars,
				L->vars.co_freevars, L->vars.co_localsplusnames,
				L->vars.co_localspluskinds};
	int32_t end = 0;
	for (size_t i = 0; i < sizeof offs / sizeof *offs; i++)
		if (offs[i] + 8 > end)
			end = offs[i] + 8;
	uint8_t hdr[256];
	struct code_ints ci;
	enum pyd_err err = end > (int32_t)sizeof hdr
				   ? PYD_E_UNSUPPORTED
				   : pyd_read(s->src, c->addr, hdr, (size_t)end);
	if (!err) {
		memcpy(&ci.argc, hdr + L->vars.co_argcount, 4);
		memcpy(&ci.kwonly, hdr + L->vars.co_kwonlyargcount, 4);
		ci.flags = (int32_t)c->flags; /* read with the code object */
		memcpy(&ci.nlocals, hdr + L->vars.co_nlocals, 4);
		if (ci.argc < 0 || ci.kwonly < 0 || ci.nlocals < 0 ||
		    ci.nlocals > (int32_t)MAX_VARS)
			err = PYD_E_READ;
	}
	if (!err)
		err = L->vars.co_localsplusnames != PYD_NO_FIELD
			      ? vars_311(s, c, hdr, &ci)
			      : vars_310(s, c, hdr, &ci);
	if (err) {
		for (size_t i = 0; i < c->nvars; i++)
			free(c->vars[i].name);
		free(c->vars);
		c->vars = NULL;
		c->nvars = c->nslots = 0;
	}
	/* A live read may catch a code object mid-free: try again next
	 * time rather than remember the failure of a torn read. */
	c->vars_state = err ? (err == PYD_E_NOMEM ? 0 : -1) : 1;
	return err;
}

/* ---- the values ----------------------------------------------------- */

/* Frame f's variables: its code object's (*c, cached by the session,
 * which owns it) and the frame's slots holding them (malloc'd,
 * c->nslots words); NULL if either cannot be read. */
static uint64_t *frame_slots(struct pyd_session *s, const struct pyd_frame *f,
			     struct pyd_code **c)
{
	const struct py_layout *L = &s->layout;
	int32_t at = L->frame_model == PY_FRAMES_OBJECT ? L->vars.f_localsplus
							: L->iframe.localsplus;
	*c = f->code ? (struct pyd_code *)pyd_code_get(s, f->code) : NULL;
	if (!*c || !f->addr || code_vars(s, *c))
		return NULL;
	size_t n = (*c)->nslots;
	uint64_t *v = malloc((n ? n : 1) * 8);
	if (v && n && pyd_read(s->src, f->addr + (uint64_t)at, v, n * 8)) {
		free(v);
		return NULL;
	}
	return v;
}

/* The value of variable v from its slot: 0 if not bound.  A cell is
 * followed to its contents (3.11+ may hold the value itself until
 * MAKE_CELL ran). */
static uint64_t var_value(struct pyd_repr *r, const struct pyd_code_var *v,
			  uint64_t slot, bool *tagged_int)
{
	struct pyd_session *s = r->s;
	*tagged_int = s->layout.code_tag_mask &&
		      (slot & TAG_INT) == TAG_INT;
	if (*tagged_int)
		return slot;
	slot &= ~s->layout.code_tag_mask;
	enum pyd_kind kind;
	if (!slot || !(v->flags & PYD_VAR_CELL) ||
	    !pyd_repr_kind(r, slot, &kind, NULL) || kind != PYD_KIND_CELL)
		return slot;
	uint64_t val = 0;
	if (pyd_read_ptr(s, slot + (uint64_t)s->layout.objects.cell_ref, &val))
		return slot; /* shows as the cell, or unreadable */
	return val;
}

/* Where a dump's reads and text are counted (the budget section below). */
struct budget {
	struct pyd_budget reads;
	const struct pyd_memsrc *inner; /* the session's own source */
	uint64_t text;
	bool text_spent;
	struct pyd_pagecache cache; /* behind the budget */
};

static bool spent(const struct budget *b)
{
	return b->reads.spent || b->text_spent;
}

static enum pyd_err frame_vars(struct pyd_repr *r, struct budget *bud,
			       const struct pyd_frame *f,
			       struct pyd_frame_vars *out)
{
	struct pyd_code *c;
	uint64_t *slots = frame_slots(r->s, f, &c);
	memset(out, 0, sizeof *out);
	if (!slots) {
		out->unreadable = true;
		return PYD_OK;
	}
	enum pyd_err err = PYD_OK;
	out->v = calloc(c->nvars ? c->nvars : 1, sizeof *out->v);
	for (size_t i = 0; out->v && i < c->nvars; i++) {
		const struct pyd_code_var *v = &c->vars[i];
		bool tagged;
		uint64_t val = var_value(r, v, slots[v->slot], &tagged);
		if (!val)
			continue;
		struct pyd_var *o = &out->v[out->n];
		o->repr = spent(bud) ? strdup("<not read: budget spent>")
				     : pyd_repr_str(r, val, tagged);
		if (o->repr && !spent(bud)) {
			size_t len = strlen(o->repr);
			bud->text_spent = len >= bud->text;
			bud->text -= bud->text_spent ? bud->text : len;
		}
		if (!o->repr) {
			err = PYD_E_NOMEM;
			break;
		}
		o->name = v->name;
		o->argument = v->flags & PYD_VAR_ARG;
		out->n++;
	}
	free(slots);
	return out->v ? err : PYD_E_NOMEM;
}

/* ---- the budget ----------------------------------------------------- */

/* Put the session's reads on a budget, served by a page cache (objects
 * sit close together: most reads then cost no syscall), until
 * budget_end.  The budget counts every read asked for, cached or not, so
 * values sharing a page cannot multiply what one dump renders. */
static void budget_begin(struct budget *b, struct pyd_session *s)
{
	*b = (struct budget){.inner = s->src, .text = PYD_LOCALS_MAX_TEXT};
	pyd_pagecache_init(&b->cache, s->src, CACHED_PAGES);
	pyd_budget_init(&b->reads, &b->cache.layer.src, PYD_LOCALS_MAX_READS,
			PYD_LOCALS_MAX_BYTES);
	s->src = &b->reads.layer.src;
}

static void budget_end(struct budget *b, struct pyd_session *s)
{
	s->src = b->inner;
	pyd_pagecache_free(&b->cache);
}

/* The variables of one stack's n frames into *vars. */
static enum pyd_err stack_vars(struct pyd_repr *r, struct budget *b,
			       const struct pyd_frame *f, size_t n,
			       struct pyd_frame_vars **vars)
{
	if (!(*vars = calloc(n ? n : 1, sizeof **vars)))
		return PYD_E_NOMEM;
	enum pyd_err err = PYD_OK;
	for (size_t j = 0; !err && j < n; j++)
		err = frame_vars(r, b, &f[j], &(*vars)[j]);
	return err;
}

enum pyd_err pyd_dump_locals(struct pyd_session *s, struct pyd_dump *d,
			     struct pyd_greenlet_set *g,
			     const struct pyd_repr_limits *lim)
{
	struct pyd_repr *r = malloc(sizeof *r);
	struct budget b;
	enum pyd_err err = PYD_OK;
	if (!r)
		return PYD_E_NOMEM;
	pyd_repr_init(r, s, lim);
	budget_begin(&b, s);
	for (size_t i = 0; !err && i < d->nthreads; i++) {
		struct pyd_thread *t = &d->threads[i];
		err = stack_vars(r, &b, t->frames, t->nframes, &t->vars);
	}
	for (size_t i = 0; !err && g && i < g->n; i++) {
		struct pyd_greenlet *gr = &g->g[i];
		err = stack_vars(r, &b, gr->frames, gr->nframes, &gr->vars);
	}
	budget_end(&b, s);
	d->has_locals = true;
	d->locals_budget_spent = spent(&b);
	free(r);
	return err;
}

void pyd_frame_vars_free(struct pyd_frame_vars *v, size_t n)
{
	for (size_t j = 0; v && j < n; j++) {
		for (size_t k = 0; k < v[j].n; k++)
			free(v[j].v[k].repr);
		free(v[j].v);
	}
	free(v);
}

/* ---- one name, as a frame sees it (py-print) ------------------------- */

static uint64_t find_local(struct pyd_repr *r, const struct pyd_frame *f,
			   const char *name, bool *tagged)
{
	struct pyd_code *c;
	uint64_t *slots = frame_slots(r->s, f, &c), val = 0;
	*tagged = false;
	if (!slots)
		return 0;
	for (size_t i = 0; i < c->nvars; i++)
		if (!strcmp(c->vars[i].name, name)) {
			val = var_value(r, &c->vars[i], slots[c->vars[i].slot],
					tagged);
			break;
		}
	free(slots);
	return val;
}

/* dict[name] of the frame's globals (which 0) or builtins (which 1). */
static uint64_t find_in(struct pyd_session *s, const struct pyd_frame *f,
			int which, const char *name)
{
	const struct py_layout *L = &s->layout;
	uint64_t dict = 0, val = 0;
	int32_t at = which ? L->vars.f_builtins : L->vars.f_globals;
	if (!f->addr || pyd_read_ptr(s, f->addr + (uint64_t)at, &dict) || !dict)
		return 0;
	pyd_dict_get(s, dict, name, &val);
	return val;
}

enum pyd_err pyd_frame_lookup(struct pyd_session *s, const struct pyd_frame *f,
			      const char *name,
			      const struct pyd_repr_limits *lim, char **repr,
			      const char **scope)
{
	struct pyd_repr *r = malloc(sizeof *r);
	struct budget b;
	bool tagged = false;
	*repr = NULL;
	*scope = NULL;
	if (!r)
		return PYD_E_NOMEM;
	pyd_repr_init(r, s, lim);
	budget_begin(&b, s);
	uint64_t val = find_local(r, f, name, &tagged);
	if (val)
		*scope = "local";
	else if ((val = find_in(s, f, 0, name)))
		*scope = "global";
	else if ((val = find_in(s, f, 1, name)))
		*scope = "builtin";
	enum pyd_err err = PYD_OK;
	if (val && !(*repr = pyd_repr_str(r, val, tagged)))
		err = PYD_E_NOMEM;
	budget_end(&b, s);
	free(r);
	return err;
}
