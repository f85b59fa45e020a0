/*
 * A greenlet module's layout from its own debug information
 * (greenlet_layout.h): any release, built with -g or with its debug file
 * installed, is read without a row of ours.
 *
 * The types and members, as greenlet 3's TGreenlet.hpp names them:
 *
 *	struct _greenlet (PyGreenlet)	dict, pimpl
 *	greenlet::Greenlet		_self, stack_state, python_state
 *	greenlet::StackState		_stack_start, stack_stop
 *	greenlet::PythonState		_top_frame, current_frame
 *	greenlet::UserGreenlet		_run_callable, _parent
 *	greenlet::MainGreenlet		_thread_state
 *	greenlet::ThreadState		current_greenlet
 *	struct _frame (PyFrameObject)	f_frame
 *
 * A member's DW_AT_data_member_location counts from the start of its
 * class, base classes included, so UserGreenlet's members are offsets in
 * the whole object.  Declarations (a class named but defined elsewhere)
 * are skipped; the first definition found of each is used.
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <string.h>

#include "greenlet_layout.h"

enum { T_PYGREENLET, T_GREENLET, T_STACK, T_PYTHON, T_USER, T_MAIN,
       T_THREAD, T_FRAME, NTYPES };

static const struct {
	const char *ns, *name; /* ns: the C++ namespace, NULL: none */
} wanted[NTYPES] = {
    [T_PYGREENLET] = {NULL, "_greenlet"},
    [T_GREENLET] = {"greenlet", "Greenlet"},
    [T_STACK] = {"greenlet", "StackState"},
    [T_PYTHON] = {"greenlet", "PythonState"},
    [T_USER] = {"greenlet", "UserGreenlet"},
    [T_MAIN] = {"greenlet", "MainGreenlet"},
    [T_THREAD] = {"greenlet", "ThreadState"},
    [T_FRAME] = {NULL, "_frame"},
};

/* Namespaces nest no deeper than this in what we look through. */
#define MAX_DEPTH 4

struct found {
	Dwarf_Die die[NTYPES];
	bool have[NTYPES];
	size_t n;
	struct glayout *out;
	bool ok;
};

static bool is_type_tag(int tag)
{
	return tag == DW_TAG_structure_type || tag == DW_TAG_class_type;
}

/* Note the definitions of wanted types among die's children. */
static void look(Dwarf_Die *parent, const char *ns, int depth,
		 struct found *f)
{
	Dwarf_Die d;
	if (dwarf_child(parent, &d) != 0)
		return;
	do {
		int tag = dwarf_tag(&d);
		const char *name = dwarf_diename(&d);
		if (tag == DW_TAG_namespace && name && depth < MAX_DEPTH) {
			look(&d, depth ? "" : name, depth + 1, f);
			continue;
		}
		if (!is_type_tag(tag) || !name || dwarf_hasattr(&d, DW_AT_declaration))
			continue;
		for (int i = 0; i < NTYPES; i++) {
			bool same_ns = wanted[i].ns ? ns && !strcmp(ns, wanted[i].ns)
						    : !ns;
			if (!f->have[i] && same_ns && !strcmp(name, wanted[i].name)) {
				f->die[i] = d;
				f->have[i] = true;
				f->n++;
			}
		}
	} while (f->n < NTYPES && dwarf_siblingof(&d, &d) == 0);
}

/* The offset of member name within the type at die, or -1. */
static int32_t member(Dwarf_Die *type, const char *name)
{
	Dwarf_Die d;
	if (dwarf_child(type, &d) != 0)
		return -1;
	do {
		Dwarf_Attribute a;
		Dwarf_Word off;
		const char *n = dwarf_diename(&d);
		if (dwarf_tag(&d) == DW_TAG_member && n && !strcmp(n, name) &&
		    dwarf_attr(&d, DW_AT_data_member_location, &a) &&
		    dwarf_formudata(&a, &off) == 0 && off < PYD_GREENLET_IMPL_MAX)
			return (int32_t)off;
	} while (dwarf_siblingof(&d, &d) == 0);
	return -1;
}

/* Offsets of a member of a member: both must be there. */
static int32_t nested(Dwarf_Die *outer, const char *field, Dwarf_Die *inner,
		      const char *name)
{
	int32_t a = member(outer, field), b = member(inner, name);
	return a < 0 || b < 0 ? -1 : a + b;
}

static bool fill(struct found *f, struct glayout *g)
{
	Dwarf_Die *d = f->die;
	int user = dwarf_bytesize(&d[T_USER]), main = dwarf_bytesize(&d[T_MAIN]);
	int size = user > main ? user : main;
	*g = (struct glayout){
	    .dict = member(&d[T_PYGREENLET], "dict"),
	    .pimpl = member(&d[T_PYGREENLET], "pimpl"),
	    .self = member(&d[T_GREENLET], "_self"),
	    .stack_start = nested(&d[T_GREENLET], "stack_state", &d[T_STACK],
				  "_stack_start"),
	    .stack_stop = nested(&d[T_GREENLET], "stack_state", &d[T_STACK],
				 "stack_stop"),
	    .top_frame = nested(&d[T_GREENLET], "python_state", &d[T_PYTHON],
				"_top_frame"),
	    .current_frame = nested(&d[T_GREENLET], "python_state",
				    &d[T_PYTHON], "current_frame"),
	    .run_callable = member(&d[T_USER], "_run_callable"),
	    .parent = member(&d[T_USER], "_parent"),
	    .thread_state = member(&d[T_MAIN], "_thread_state"),
	    .ts_current = member(&d[T_THREAD], "current_greenlet"),
	    .f_frame = member(&d[T_FRAME], "f_frame"),
	};
	const int32_t impl[] = {g->self, g->stack_start, g->stack_stop,
				g->top_frame, g->current_frame,
				g->run_callable, g->parent, g->thread_state};
	if (size <= 0 || size >= PYD_GREENLET_IMPL_MAX || g->dict < 0 ||
	    g->pimpl < 0 || g->ts_current < 0 || g->f_frame < 0)
		return false;
	for (size_t i = 0; i < sizeof impl / sizeof *impl; i++)
		if (impl[i] < 0 || impl[i] + 8 > size)
			return false;
	g->impl_size = (uint8_t)size;
	return true;
}

static int one_module(Dwfl_Module *mod, void **userdata, const char *name,
		      Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)name, (void)start;
	struct found *f = arg;
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	while (dw && f->n < NTYPES &&
	       dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0)
		look(&cudie, NULL, 0, f);
	/* The DIEs live as long as the Dwfl: read them now. */
	f->ok = f->n == NTYPES && fill(f, f->out);
	return DWARF_CB_ABORT;
}

bool pyd_greenlet_dwarf(int fd, const char *path, struct glayout *out)
{
	char *debuginfo_path = NULL;
	const Dwfl_Callbacks cb = {
	    .find_elf = dwfl_build_id_find_elf,
	    .find_debuginfo = dwfl_standard_find_debuginfo,
	    .debuginfo_path = &debuginfo_path,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	struct found f = {.out = out};
	if (!dwfl)
		return false;
	/* dwfl_report_offline takes fd over, and closes it, whether it
	 * reports the module or fails. */
	if (dwfl_report_offline(dwfl, "greenlet", path, fd) &&
	    dwfl_report_end(dwfl, NULL, NULL) == 0)
		dwfl_getmodules(dwfl, one_module, &f, 0);
	dwfl_end(dwfl);
	return f.ok;
}
