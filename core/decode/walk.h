/*
 * The runtime's two linked lists: its interpreters, and each
 * interpreter's thread states.  Every decoder that needs them (the dump,
 * the sampler, the task graph) walks them here, so the bounds and the
 * loop check live in one place: target memory may be corrupt, and a list
 * that points back into itself must end the walk, not repeat it.
 *
 *	struct pyd_walk w;
 *	uint64_t interp;
 *	for (pyd_walk_interps(&w, s); pyd_walk_next(&w, &interp);)
 *		...;
 *	if (w.err) ...
 *
 * Nodes come in list order: newest first, as CPython pushes them, each
 * once: a list that loops back ends where it does, and the session
 * notes its memory as corrupt (pyd_session_corruption).  A caller that
 * leaves the loop early calls pyd_walk_end.
 */
#ifndef PYD_DECODE_WALK_H
#define PYD_DECODE_WALK_H

#include "session.h"

/* Interpreters and threads of one interpreter we list at most. */
#define PYD_MAX_INTERPS 4096
#define PYD_MAX_THREADS 65536

struct pyd_walk {
	struct pyd_session *s;
	int32_t link_off; /* of the next pointer within a node */
	uint64_t cur;     /* the node pyd_walk_next returns next; 0: none */
	uint64_t head;    /* the first node, as read */
	uint64_t link;    /* the next pointer of the node last returned */
	size_t n, max;
	/* Nodes returned so far, an open-addressing set: a node met again
	 * means the list loops. */
	uint64_t *seen;
	size_t seen_cap;
	uint64_t interp; /* whose threads (0: the interpreters) */
	/* After the walk: PYD_OK at the end of the list, at the bound
	 * (capped) or where it looped back (looped: the session notes the
	 * corruption), else why it stopped. */
	enum pyd_err err;
	bool capped, looped;
};

void pyd_walk_interps(struct pyd_walk *w, struct pyd_session *s);
void pyd_walk_threads(struct pyd_walk *w, struct pyd_session *s,
		      uint64_t interp);
/* The next node into *node; false at the end (see err and capped). */
bool pyd_walk_next(struct pyd_walk *w, uint64_t *node);
/* Release the walk's memory; pyd_walk_next does when it returns false. */
void pyd_walk_end(struct pyd_walk *w);

#endif
