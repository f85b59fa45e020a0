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

/* Batches of the names' read-ahead: a name is 8 levels down from
 * threading._active on 3.15 (the Thread and its ident, the attributes'
 * keys and values, the name's head and characters), and some room. */
#define NAME_PASSES 12

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
 * order: the one registered first on that OS thread. */
static void name_by(struct pyd_session *s, const uint64_t *kv, size_t nkv,
		    bool native, struct pyd_thread *t, bool *named, size_t n)
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

struct name_ctx {
	struct pyd_session *s;
	const uint64_t *kv; /* threading._active's keys and values */
};

static bool all_named(const bool *named, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (!named[j])
			return false;
	return true;
}

/* A dry run of the reads that name entry i of threading._active (kv) by
 * its ident: the ident, its Thread's _name, the name's characters (a
 * program whose threads are greenlets, rare, reads native ids after). */
static void name_dry(void *ctx, size_t i)
{
	struct name_ctx *x = ctx;
	uint64_t name = 0;
	int64_t key;
	match_key(x->s, x->kv + 2 * i, false, &key);
	if (!pyd_obj_attr(x->s, x->kv[2 * i + 1], "_name", &name) && name)
		free(pyd_read_str(x->s, name));
}

/* The names are read ahead (pyd_read_ahead_alike), a level of every
 * Thread a batch, into one buffer of the bytes they are: a page cache
 * wrote a page of its own for each page they lie in, each a page fault
 * (100 threads: 64 of a dump's 257). */
void pyd_thread_names(struct pyd_session *s, uint64_t interp,
		      struct pyd_thread *t, size_t n)
{
	uint64_t active, *kv;
	size_t nkv;
	bool *named;
	if (!n || !s->layout.objects.valid ||
	    !(named = calloc(n, sizeof *named)))
		return;
	if ((active = active_threads(s, interp)) &&
	    !pyd_dict_items(s, active, PYD_MAX_ITEMS, &kv, &nkv, NULL)) {
		struct name_ctx x = {s, kv};
		struct pyd_read_ahead ra;
		pyd_read_ahead_alike(s, &ra, name_dry, &x, nkv, NAME_PASSES);
		name_by(s, kv, nkv, false, t, named, n);
		if (!all_named(named, n))
			name_by(s, kv, nkv, true, t, named, n);
		pyd_read_ahead_end(s, &ra);
		free(kv);
	}
	free(named);
}
