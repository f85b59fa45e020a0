/*
 * Python thread names.
 *
 * Until 3.14 CPython never tells the kernel a thread's name, so the OS
 * name is the program's ("python3") for every thread; from 3.14 it does,
 * but the kernel keeps 15 bytes, the main thread keeps the program's name
 * and a thread renamed later keeps its first.  The names people set live
 * in threading._active, {ident: Thread}, where ident is the pthread_t the
 * thread state records: read them there on every version, and leave the
 * OS name to threads threading does not know.
 */
#include <stdio.h>
#include <stdlib.h>

#include "objects.h"
#include "thread_names.h"
#include "unicode.h"

/* threading._active of an interpreter, or 0. */
static uint64_t active_threads(struct pyd_session *s, uint64_t interp)
{
	const struct py_layout *L = &s->layout;
	uint64_t modules, mod, md, active;
	if (pyd_read_ptr(s, interp + (uint64_t)L->objects.interp_modules,
			 &modules) ||
	    !modules || pyd_dict_get(s, modules, "threading", &mod) || !mod ||
	    pyd_read_ptr(s, mod + PYD_MODULE_MD_DICT, &md) || !md ||
	    pyd_dict_get(s, md, "_active", &active))
		return 0;
	return active;
}

static void name_thread(struct pyd_session *s, uint64_t ident,
			uint64_t thread, struct pyd_thread *t, size_t n)
{
	uint64_t name;
	for (size_t j = 0; j < n; j++) {
		if (t[j].ident != ident)
			continue;
		char *str;
		if (pyd_obj_attr(s, thread, "_name", &name) || !name ||
		    !(str = pyd_read_str(s, name)))
			return;
		snprintf(t[j].name, sizeof t[j].name, "%s", str);
		pyd_utf8_repair(t[j].name);
		free(str);
		return;
	}
}

void pyd_thread_names(struct pyd_session *s, uint64_t interp,
		      struct pyd_thread *t, size_t n)
{
	uint64_t active, *kv;
	size_t nkv;
	if (!n || !s->layout.objects.valid ||
	    !(active = active_threads(s, interp)) ||
	    pyd_dict_items(s, active, PYD_MAX_ITEMS, &kv, &nkv, NULL))
		return;
	for (size_t i = 0; i < nkv; i++) {
		int64_t ident;
		if (!pyd_long_value(s, kv[2 * i], &ident))
			name_thread(s, (uint64_t)ident, kv[2 * i + 1], t, n);
	}
	free(kv);
}
