/*
 * What every profile format shares: how a frame is labelled, the
 * depth-first walk over a call tree, and the HTML pages' data (report.h).
 */
#include <stdio.h>
#include <string.h>

#include "profiles.h"

/* Command lines run long (a JVM-like list of flags): labels keep this
 * much of one. */
#define PROCESS_LABEL_CMDLINE 60

/* Tasks without a name (3.7) are already called "<task 0x...>". */
const char *pyd_task_label(const char *name, char *buf, size_t bufsz)
{
	/* A label already made (read back from a file; greenlet mode's
	 * "<greenlet NAME>") is kept as it is. */
	bool made = !strncmp(name, "<task ", 6) || !strncmp(name, "<greenlet ", 10);
	snprintf(buf, bufsz, made ? "%s" : "<task %s>", name);
	return buf;
}

const char *pyd_prof_frame_label(const struct pyd_prof_frame *f, char *buf,
                                 size_t bufsz)
{
	const char *name = f->qualname ? f->qualname : f->function;
	if (f->kind == PYD_PF_TASK)
		pyd_task_label(name, buf, bufsz);
	else if (f->kind == PYD_PF_ELIDED || f->kind == PYD_PF_GC)
		snprintf(buf, bufsz, "%s", name);
	else if (f->line > 0)
		snprintf(buf, bufsz, "%s (%s:%d)", name, f->file, f->line);
	else
		snprintf(buf, bufsz, "%s (%s)", name, f->file);
	return buf;
}

const char *pyd_prof_process_label(const struct pyd_profile *p, uint32_t proc,
                                   char *buf, size_t bufsz)
{
	const struct pyd_prof_process *pr = &p->processes[proc];
	char cmd[PROCESS_LABEL_CMDLINE + 1];
	if (!pr->cmdline[0]) {
		snprintf(buf, bufsz, "process %d", pr->pid);
		return buf;
	}
	/* A label is one line: the command line's escapes count in its
	 * length; cut, it leaves room for "...". */
	bool whole = pyd_one_line(pr->cmdline, cmd, sizeof cmd);
	if (!whole)
		pyd_one_line(pr->cmdline, cmd, PROCESS_LABEL_CMDLINE - 2);
	snprintf(buf, bufsz, "process %d (%s%s)", pr->pid, cmd,
	         whole ? "" : "...");
	return buf;
}

const struct pyd_prof_thread *pyd_prof_thread_of(const struct pyd_profile *p,
                                                 uint32_t node)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].node == node)
			return &p->threads[i];
	return NULL;
}

void pyd_prof_walk_start(struct pyd_prof_walk *w, const struct pyd_profile *p,
                         uint32_t top)
{
	w->p = p;
	w->top = top;
	w->next = p->nnodes ? p->nodes[top].first_child : PYD_PROF_NONE;
	w->next_depth = 1;
	w->depth = 0;
}

/* Without recursion: stacks can be 100,000 frames deep. */
bool pyd_prof_walk_next(struct pyd_prof_walk *w, uint32_t *node)
{
	const struct pyd_prof_node *nodes = w->p->nodes;
	uint32_t n = w->next;
	if (n == PYD_PROF_NONE)
		return false;
	*node = n;
	w->depth = w->next_depth;
	if (nodes[n].first_child != PYD_PROF_NONE) {
		w->next = nodes[n].first_child;
		w->next_depth = w->depth + 1;
		return true;
	}
	size_t depth = w->depth;
	while (n != w->top && nodes[n].next_sibling == PYD_PROF_NONE) {
		n = nodes[n].parent;
		depth--;
	}
	w->next = n == w->top ? PYD_PROF_NONE : nodes[n].next_sibling;
	w->next_depth = depth;
	return true;
}

/* JSON inside a script element: escape every '<' (it only occurs in
 * strings) so that no frame name can close the element or open a
 * comment. */
static void put_script_safe(struct pyd_buf *b, const char *s, size_t n)
{
	const char *end = s + n;

	while (s < end) {
		const char *lt = memchr(s, '<', (size_t)(end - s));
		size_t run = lt ? (size_t)(lt - s) : (size_t)(end - s);
		pyd_buf_put(b, s, run);
		if (!lt)
			break;
		pyd_buf_put(b, "\\u003c", 6);
		s = lt + 1;
	}
}

void pyd_prof_page(struct pyd_buf *b, const char *page,
                   const struct pyd_buf *data)
{
	static const char mark[] = "@PYD_DATA@";
	const char *at = strstr(page, mark);
	const char *rest = at + sizeof mark - 1;

	pyd_buf_put(b, page, (size_t)(at - page));
	if (data->failed) {
		b->failed = true;
		pyd_buf_put(b, "null", 4);
	} else {
		put_script_safe(b, data->data, data->len);
	}
	pyd_buf_put(b, rest, strlen(rest));
}
