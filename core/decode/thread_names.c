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
 *
 * A program monkey-patched by gevent keys _active by greenlet ids, and
 * every Thread it starts is a greenlet of the thread that started it: a
 * thread no ident matches is named by the first entry whose native id is
 * its OS thread id (the main thread's _MainThread, registered before any
 * greenlet's), as threading.current_thread() names it there.  Renaming
 * the OS thread after each started Thread (3.14+) makes the OS name
 * wrong there too.
 */
#include <stdio.h>
#include <stdlib.h>

#include "objects.h"
#include "thread_names.h"
#include "unicode.h"

/* Pages the names of an interpreter's threads are read through: 1 MB. */
#define NAME_PAGES 256

/* threading._active of an interpreter, or 0. */
static uint64_t active_threads(struct pyd_session *s, uint64_t interp)
{
	uint64_t md, active;
	if (pyd_module_dict(s, interp, "threading", &md) || !md ||
	    pyd_dict_get(s, md, "_active", &active))
		return 0;
	return active;
}

/* The key a Thread object is matched by: its ident (the dict's key), or
 * its native id (Thread._native_id, 3.8+); false if it has none. */
static bool match_key(struct pyd_session *s, const uint64_t *pair,
		      bool native, int64_t *key)
{
	uint64_t v;
	if (!native)
		return !pyd_long_value(s, pair[0], key);
	return !pyd_obj_attr(s, pair[1], "_native_id", &v) && v &&
	       !pyd_long_value(s, v, key);
}

/* Name every thread not named yet whose ident (or native id) is that of
 * an entry of threading._active, the first such entry in the dict's
 * order: the one registered first on that OS thread.  Level by level,
 * each through the page cache p, filled a level at a time: the Thread
 * objects (their pages read before), then their names' pages in one
 * read, then the names. */
static void name_by(struct pyd_session *s, struct pyd_paged *p,
		    const uint64_t *kv, size_t nkv, bool native,
		    struct pyd_thread *t, bool *named, size_t n)
{
	uint64_t *name = calloc(n, sizeof *name);
	if (!name)
		return;
	for (size_t i = 0; i < nkv; i++) {
		int64_t key;
		if (!match_key(s, kv + 2 * i, native, &key))
			continue;
		for (size_t j = 0; j < n; j++)
			if (!named[j] && !name[j] &&
			    (native ? t[j].tid == key
				    : t[j].ident == (uint64_t)key)) {
				if (pyd_obj_attr(s, kv[2 * i + 1], "_name",
						 &name[j]))
					name[j] = 0;
				break;
			}
	}
	if (p->on)
		pyd_pagecache_fill(&p->pc, name, n);
	for (size_t j = 0; j < n; j++) {
		char *str = name[j] ? pyd_read_str(s, name[j]) : NULL;
		if (!str)
			continue;
		snprintf(t[j].name, sizeof t[j].name, "%s", str);
		pyd_utf8_repair(t[j].name);
		free(str);
		named[j] = true;
	}
	free(name);
}

static bool all_named(const bool *named, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (!named[j])
			return false;
	return true;
}

void pyd_thread_names(struct pyd_session *s, uint64_t interp,
		      struct pyd_thread *t, size_t n)
{
	uint64_t active, *kv;
	size_t nkv;
	bool *named;
	struct pyd_paged p;
	if (!n || !s->layout.objects.valid ||
	    !(named = calloc(n, sizeof *named)))
		return;
	/* A dozen reads of a few bytes a thread (its Thread object, the
	 * dict of its attributes, the name): each page once, and the pages
	 * of the keys and Thread objects, then of the names, each level in
	 * one read (100 threads: 27 reads fewer). */
	pyd_session_paged(s, &p, NAME_PAGES);
	if ((active = active_threads(s, interp)) &&
	    !pyd_dict_items(s, active, PYD_MAX_ITEMS, &kv, &nkv, NULL)) {
		if (p.on)
			pyd_pagecache_fill(&p.pc, kv, 2 * nkv);
		name_by(s, &p, kv, nkv, false, t, named, n);
		if (!all_named(named, n))
			name_by(s, &p, kv, nkv, true, t, named, n);
		free(kv);
	}
	pyd_session_unpaged(s, &p);
	free(named);
}
