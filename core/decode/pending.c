/*
 * The call a suspended frame is in (struct pyd_call): what a greenlet
 * that switched away waits on.  A greenlet switches inside a C function
 * its innermost Python frame called -- gevent's Hub.wait(timer),
 * Event.wait(), wait_on_socket(sock, io), greenlet.switch() -- and from
 * 3.14 the evaluation loop spills its value stack into the frame around
 * every call that may run other code, so the switched-out frame keeps,
 * just below iframe.stackpointer, what CALL pops:
 *
 *	[callable, self or NULL, oparg arguments]
 *
 * oparg being the byte after the opcode at instr_ptr (CALL's specialised
 * forms keep it).  A call with keyword arguments is a CALL_KW (one of the
 * layout's call_kw_ops): the tuple of their names is on top of those,
 * whose last len(names) are the keyword ones, shown as name=value.
 * Before 3.14 the frame keeps no stack pointer there.
 *
 * Nothing else says the instruction is a plain call (a property's getter
 * may switch too), so the callable must be one
 * we can name, or nothing is reported: a function, a bound method of
 * one, a method descriptor, a built-in function or method -- the
 * interpreter's own static types, known by where they live -- or a
 * Cython function, whose own method table must agree with its names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../buf.h"
#include "objects.h"
#include "pending.h"
#include "repr.h"

/* Cython 3's function object on CPython 3.9+: a PyCMethodObject, then
 * its dict and its names (__name__ made when first asked for,
 * __qualname__ from the start), this far past the object header.
 * Checked against ml_name before use. */
#define CYFUNC_NAME 56
#define CYFUNC_QUALNAME 64
#define CYFUNC_TYPE "cython_function_or_method"

/* A frame whose value stack is deeper than this is not one. */
#define MAX_STACK_BYTES (1u << 24)

/* The keyword arguments' names of a CALL_KW: n of them, the first
 * PYD_CALL_MAX_ARGS read (the only ones that can be shown). */
struct pyd_kw {
	size_t n;
	char *names[PYD_CALL_MAX_ARGS];
};

/* A type's __name__: its tp_name after the module's dotted path. */
static void short_type_name(struct pyd_session *s, uint64_t type, char *out,
			    size_t outsz)
{
	char full[128];
	pyd_type_name(s, type, full, sizeof full);
	const char *dot = strrchr(full, '.');
	snprintf(out, outsz, "%s", dot ? dot + 1 : full);
}

static char *joined(const char *owner, const char *name)
{
	struct pyd_buf b = {0};
	pyd_buf_str(&b, owner);
	if (*owner)
		pyd_buf_put(&b, ".", 1);
	pyd_buf_str(&b, name);
	return pyd_buf_take(&b);
}

/* A built-in function or method: ml_name, after its receiver's type
 * unless that is a module (a module's function). */
static char *cfunction_name(struct pyd_session *s, uint64_t fn)
{
	const struct py_layout *L = &s->layout;
	uint64_t ml, name, self, type;
	char str[128], owner[128] = "";
	if (pyd_read_ptr(s, fn + (uint64_t)L->objects.cfunc_ml, &ml) ||
	    pyd_read_ptr(s, ml, &name) ||
	    pyd_read_ptr(s, fn + (uint64_t)L->objects.cfunc_self, &self))
		return NULL;
	pyd_read_cstr(s, name, str, sizeof str);
	if (!str[0])
		return NULL;
	if (self && !pyd_obj_type(s, self, &type) &&
	    !pyd_builtin_type_is(s, type, "module"))
		short_type_name(s, type, owner, sizeof owner);
	return joined(owner, str);
}

/* A method descriptor: its type's name and its own. */
static char *descriptor_name(struct pyd_session *s, uint64_t d)
{
	const struct py_layout *L = &s->layout;
	uint64_t type, name;
	char owner[128];
	if (pyd_read_ptr(s, d + (uint64_t)L->objects.descr_type, &type) ||
	    pyd_read_ptr(s, d + (uint64_t)L->objects.descr_name, &name))
		return NULL;
	char *str = pyd_read_str(s, name);
	short_type_name(s, type, owner, sizeof owner);
	char *out = str ? joined(owner, str) : NULL;
	free(str);
	return out;
}

/* A Cython function: its __qualname__, if its names agree with the
 * method table every PyCFunctionObject points at. */
static char *cyfunction_name(struct pyd_session *s, uint64_t fn,
			     uint64_t type)
{
	uint64_t flags, ml, cname, name, qualname;
	char tname[128], mlname[128];
	if (pyd_read_ptr(s, type + (uint64_t)s->layout.object.tp_flags,
			 &flags) ||
	    !(flags & PYD_TPFLAGS_HEAPTYPE))
		return NULL;
	pyd_type_name(s, type, tname, sizeof tname);
	const char *dot = strrchr(tname, '.');
	if (strcmp(dot ? dot + 1 : tname, CYFUNC_TYPE) ||
	    pyd_read_ptr(s, fn + (uint64_t)s->layout.objects.cfunc_ml, &ml) ||
	    pyd_read_ptr(s, ml, &cname) ||
	    pyd_read_ptr(s, fn + pyd_obj_head(&s->layout) + CYFUNC_NAME, &name) ||
	    pyd_read_ptr(s, fn + pyd_obj_head(&s->layout) + CYFUNC_QUALNAME,
			 &qualname))
		return NULL;
	pyd_read_cstr(s, cname, mlname, sizeof mlname);
	/* __name__ is made from ml_name when first asked for. */
	if (!mlname[0] || (name && !pyd_str_eq(s, name, mlname)))
		return NULL;
	char *q = pyd_read_str(s, qualname);
	size_t n = q ? strlen(q) : 0, m = strlen(mlname);
	if (q && n >= m && !strcmp(q + n - m, mlname) &&
	    (n == m || q[n - m - 1] == '.'))
		return q;
	free(q);
	return NULL;
}

/* The __qualname__ of the callable at fn; NULL if it is none we know. */
static char *callable_qualname(struct pyd_session *s, uint64_t fn,
			       unsigned depth)
{
	const struct py_layout *L = &s->layout;
	uint64_t type, inner, name;
	if (!fn || pyd_obj_type(s, fn, &type))
		return NULL;
	const char *kind = pyd_builtin_type_name(s, type);
	if (!kind)
		kind = "";
	if (!strcmp(kind, "function"))
		return pyd_read_ptr(s, fn + (uint64_t)L->objects.func_qualname,
				    &name)
			       ? NULL
			       : pyd_read_str(s, name);
	if (!strcmp(kind, "method"))
		return depth || pyd_read_ptr(s, fn + (uint64_t)L->objects.meth_func,
					     &inner)
			       ? NULL
			       : callable_qualname(s, inner, depth + 1);
	if (!strcmp(kind, "builtin_function_or_method"))
		return cfunction_name(s, fn);
	if (!strcmp(kind, "method_descriptor"))
		return descriptor_name(s, fn);
	return cyfunction_name(s, fn, type);
}

/* A value stack entry: a stack reference from 3.14, whose low bits are
 * tags, both set for an int held in the reference itself. */
static char *render(struct pyd_repr *r, uint64_t ref)
{
	uint64_t mask = r->s->layout.code_tag_mask;
	bool tagged_int = mask && (ref & 3) == 3;
	return pyd_repr_str(r, tagged_int ? ref : ref & ~mask, tagged_int);
}

/* "name=value" for a keyword argument, the value alone otherwise. */
static char *render_arg(struct pyd_repr *r, uint64_t ref, const char *name)
{
	char *value = render(r, ref);
	if (!value || !name)
		return value;
	struct pyd_buf b = {0};
	pyd_buf_printf(&b, "%s=%s", name, value);
	free(value);
	return pyd_buf_take(&b);
}

static bool is_call_kw(const struct py_layout *L, uint8_t op)
{
	for (size_t i = 0; i < sizeof L->objects.call_kw_ops; i++)
		if (op && op == L->objects.call_kw_ops[i])
			return true;
	return false;
}

/* The names of a CALL_KW's keyword arguments: its kwnames tuple, at most
 * nargs str.  False if the slot holds anything else. */
static bool kw_names(struct pyd_session *s, uint64_t ref, size_t nargs,
		     struct pyd_kw *kw)
{
	uint64_t tuple = ref & ~s->layout.code_tag_mask, type, *items;
	size_t n, size;
	if (pyd_obj_type(s, tuple, &type) ||
	    !pyd_builtin_type_is(s, type, "tuple") ||
	    pyd_seq_items(s, tuple, false, PYD_CALL_MAX_ARGS, &items, &n,
			  &size))
		return false;
	bool ok = size <= nargs;
	kw->n = size;
	for (size_t i = 0; ok && i < n; i++)
		ok = !pyd_obj_type(s, items[i], &type) &&
		     pyd_builtin_type_is(s, type, "str") &&
		     (kw->names[i] = pyd_read_str(s, items[i]));
	free(items);
	return ok;
}

static void kw_free(struct pyd_kw *kw)
{
	for (size_t i = 0; i < PYD_CALL_MAX_ARGS; i++)
		free(kw->names[i]);
}

void pyd_call_free(struct pyd_call *c)
{
	if (!c)
		return;
	free(c->function);
	for (size_t i = 0; i < c->nargs; i++)
		free(c->args[i]);
	free(c);
}

/* The call's arguments from its slots [callable, self or NULL, nargs
 * arguments], of which the first 2 + shown were read; the last kw->n
 * arguments are keyword ones. */
static enum pyd_err render_args(struct pyd_session *s, struct pyd_call *c,
				const uint64_t *slots, size_t nargs,
				size_t shown, const struct pyd_kw *kw)
{
	struct pyd_repr *r = malloc(sizeof *r);
	if (!r)
		return PYD_E_NOMEM;
	pyd_repr_init(r, s, &PYD_REPR_DEFAULTS);
	enum pyd_err err = PYD_OK;
	/* The receiver, where the call has one, is the first argument. */
	size_t from = (slots[1] & ~s->layout.code_tag_mask) ? 1 : 2;
	size_t first_kw = 2 + nargs - kw->n;
	c->more = nargs > shown;
	for (size_t i = from; i < 2 + shown && c->nargs < PYD_CALL_MAX_ARGS;
	     i++) {
		const char *name = i >= first_kw ? kw->names[i - first_kw] : NULL;
		if (!(c->args[c->nargs++] = render_arg(r, slots[i], name)))
			err = PYD_E_NOMEM;
	}
	c->more |= from == 1 && shown == PYD_CALL_MAX_ARGS;
	free(r);
	return err;
}

/* The callable and arguments below top, the frame's stack pointer less
 * the kwnames slot of a CALL_KW, into *out (NULL if not a call we can
 * name). */
static enum pyd_err read_call(struct pyd_session *s, const struct pyd_frame *f,
			      uint64_t top, size_t nargs,
			      const struct pyd_kw *kw, struct pyd_call **out)
{
	const struct py_layout *L = &s->layout;
	uint64_t slots[2 + PYD_CALL_MAX_ARGS];
	size_t shown = nargs > PYD_CALL_MAX_ARGS ? PYD_CALL_MAX_ARGS : nargs;
	uint64_t base = f->addr + (uint64_t)L->iframe.localsplus;
	if (top < base || top - base > MAX_STACK_BYTES ||
	    top - base < 8 * (2 + (uint64_t)nargs) ||
	    pyd_read(s->src, top - 8 * (2 + (uint64_t)nargs), slots,
		     8 * (2 + shown)))
		return PYD_OK;
	char *function = callable_qualname(s, slots[0] & ~L->code_tag_mask, 0);
	struct pyd_call *c = function ? calloc(1, sizeof *c) : NULL;
	if (!c) {
		free(function);
		return function ? PYD_E_NOMEM : PYD_OK;
	}
	c->function = function;
	enum pyd_err err = render_args(s, c, slots, nargs, shown, kw);
	if (err) {
		pyd_call_free(c);
		return err;
	}
	*out = c;
	return PYD_OK;
}

enum pyd_err pyd_pending_call(struct pyd_session *s, const struct pyd_frame *f,
			      struct pyd_call **out)
{
	const struct py_layout *L = &s->layout;
	uint64_t instr, sp, kwnames;
	uint8_t unit[2];
	*out = NULL;
	if (L->iframe.stackpointer == PYD_NO_FIELD || !f->addr)
		return PYD_OK;
	enum pyd_err err;
	if ((err = pyd_read_ptr(s, f->addr + (uint64_t)L->iframe.instr, &instr)) ||
	    (err = pyd_read_ptr(s, f->addr + (uint64_t)L->iframe.stackpointer,
				&sp)) ||
	    (err = pyd_read(s->src, instr, unit, sizeof unit)))
		return err == PYD_E_EXITED || err == PYD_E_NOMEM ? err : PYD_OK;
	struct pyd_kw kw = {0};
	bool call_kw = is_call_kw(L, unit[0]);
	if (call_kw && (pyd_read_ptr(s, sp - 8, &kwnames) ||
			!kw_names(s, kwnames, unit[1], &kw))) {
		kw_free(&kw);
		return PYD_OK;
	}
	err = read_call(s, f, call_kw ? sp - 8 : sp, unit[1], &kw, out);
	kw_free(&kw);
	return err;
}
