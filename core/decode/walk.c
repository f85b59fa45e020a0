/*
 * Walking the interpreter and thread-state lists (see walk.h).
 */
#include "walk.h"

#include <stdlib.h>
#include <string.h>

#include "objects.h"

static void walk_start(struct pyd_walk *w, struct pyd_session *s,
		       int32_t link_off, size_t max, uint64_t interp)
{
	memset(w, 0, sizeof *w);
	w->s = s;
	w->link_off = link_off;
	w->max = max;
	w->interp = interp;
}

/* The first interpreter: _PyRuntime's list (3.7+); on 3.6 interp_head,
 * which is static and so only in .symtab, or else the interpreter of
 * the thread holding the GIL. */
static enum pyd_err first_interp(struct pyd_session *s, uint64_t *interp)
{
	const struct py_layout *L = &s->layout;
	*interp = 0;
	if (s->rt.runtime_addr)
		return pyd_read_ptr(s, s->rt.runtime_addr +
					       (uint64_t)L->runtime.interpreters_head,
				    interp);
	if (s->rt.interp_head_addr)
		return pyd_read_ptr(s, s->rt.interp_head_addr, interp);
	uint64_t ts = 0;
	if (s->rt.tstate_current_addr &&
	    !pyd_read_ptr(s, s->rt.tstate_current_addr, &ts) && ts)
		return pyd_read_ptr(s, ts + (uint64_t)L->tstate.interp, interp);
	return PYD_E_READ;
}

void pyd_walk_interps(struct pyd_walk *w, struct pyd_session *s)
{
	walk_start(w, s, s->layout.interp.next, PYD_MAX_INTERPS, 0);
	w->err = first_interp(s, &w->cur);
	w->head = w->cur;
}

void pyd_walk_threads(struct pyd_walk *w, struct pyd_session *s,
		      uint64_t interp)
{
	walk_start(w, s, s->layout.tstate.next, PYD_MAX_THREADS, interp);
	w->err = pyd_read_ptr(s, interp + (uint64_t)s->layout.interp.tstate_head,
			      &w->cur);
	w->head = w->cur;
}

void pyd_walk_end(struct pyd_walk *w)
{
	free(w->seen);
	w->seen = NULL;
	w->seen_cap = 0;
}

static size_t seen_slot(const uint64_t *set, size_t cap, uint64_t node)
{
	size_t i = (size_t)((node * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
	while (set[i] && set[i] != node)
		i = (i + 1) & (cap - 1);
	return i;
}

static bool seen_grow(struct pyd_walk *w)
{
	size_t cap = w->seen_cap ? w->seen_cap * 2 : 64;
	uint64_t *set = calloc(cap, sizeof *set);
	if (!set)
		return false;
	for (size_t i = 0; i < w->seen_cap; i++)
		if (w->seen[i])
			set[seen_slot(set, cap, w->seen[i])] = w->seen[i];
	free(w->seen);
	w->seen = set;
	w->seen_cap = cap;
	return true;
}

/* Remember node; false if it was met before (or memory ran out). */
static bool first_visit(struct pyd_walk *w, uint64_t node)
{
	if (2 * (w->n + 1) > w->seen_cap && !seen_grow(w)) {
		w->err = PYD_E_NOMEM;
		return false;
	}
	size_t i = seen_slot(w->seen, w->seen_cap, node);
	if (w->seen[i]) {
		/* The list loops back: it ends here, and the dump says its
		 * memory is corrupt. */
		w->looped = true;
		if (w->interp)
			pyd_session_corrupt(w->s, "the thread list of "
					    "interpreter 0x%llx loops back to "
					    "thread state 0x%llx",
					    (unsigned long long)w->interp,
					    (unsigned long long)node);
		else
			pyd_session_corrupt(w->s, "the interpreter list loops "
					    "back to interpreter 0x%llx",
					    (unsigned long long)node);
		return false;
	}
	w->seen[i] = node;
	return true;
}

bool pyd_walk_next(struct pyd_walk *w, uint64_t *node)
{
	w->capped = w->cur && w->n == w->max;
	if (w->err || !w->cur || w->capped || !first_visit(w, w->cur)) {
		pyd_walk_end(w);
		return false;
	}
	*node = w->cur;
	w->n++;
	/* A link that cannot be read ends the walk after this node, which
	 * the caller still gets. */
	w->link = 0;
	w->err = pyd_read_ptr(w->s, w->cur + (uint64_t)w->link_off, &w->link);
	w->cur = w->link;
	return true;
}
