/*
 * speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json): the interned frames
 * once in shared.frames, then one "sampled" profile per thread.  The profile is
 * already aggregated, so each distinct stack (a node with self samples) is one
 * sample whose weight is its count, in seconds when the sampler estimated what
 * a sample stands for.
 */
#include <stdio.h>
#include <stdlib.h>

#include "profiles.h"
#include "../grow.h"
#include "report.h"


/* The frames of the stack being walked, outermost first. */
struct path {
	uint32_t *frames;
	size_t len, cap;
};

static bool path_push(struct path *s, uint32_t frame)
{
	if (!pyd_grow((void **)&s->frames, &s->cap, s->len + 1,
		      sizeof *s->frames))
		return false;
	s->frames[s->len++] = frame;
	return true;
}

static void frame_json(struct pyd_buf *b, const struct pyd_prof_frame *f)
{
	char label[512];

	PUT(b, "{\"name\": ");
	if (f->kind == PYD_PF_TASK)
		pyd_buf_json_str(b,
		                 pyd_prof_frame_label(f, label, sizeof label));
	else
		pyd_buf_json_str(b, f->qualname ? f->qualname : f->function);
	/* speedscope wants these absent rather than null. */
	if (f->file) {
		PUT(b, ", \"file\": ");
		pyd_buf_json_str(b, f->file);
	}
	if (f->line > 0)
		pyd_buf_printf(b, ", \"line\": %d", f->line);
	PUT(b, "}");
}

static void sample_json(struct pyd_buf *b, const struct path *s, bool first)
{
	pyd_buf_printf(b, "%s", first ? "[" : ", [");
	for (size_t i = 0; i < s->len; i++)
		pyd_buf_printf(b, i ? ",%u" : "%u", s->frames[i]);
	PUT(b, "]");
}

static void put_sample(struct pyd_buf *b, const struct path *s,
                       const struct pyd_prof_node *node, bool weights,
                       double unit, bool *first)
{
	if (!node->self)
		return;
	if (!weights)
		sample_json(b, s, *first);
	else if (unit)
		pyd_buf_printf(b, "%s%.9g", *first ? "" : ", ",
		               (double)node->self * unit);
	else
		pyd_buf_printf(b, "%s%llu", *first ? "" : ", ",
		               (unsigned long long)node->self);
	*first = false;
}

/* Depth first below the thread node: the samples array, then the weights
 * (the same walk twice keeps the two arrays in step without storing them).
 * The thread node's own samples (no Python frame) have the empty stack. */
static bool thread_stacks(struct pyd_buf *b, const struct pyd_profile *p,
                          uint32_t top, bool weights, double unit)
{
	struct path s = {0};
	bool first = true, ok = true;
	struct pyd_prof_walk w;
	uint32_t n;

	put_sample(b, &s, &p->nodes[top], weights, unit, &first);
	for (pyd_prof_walk_start(&w, p, top); ok && pyd_prof_walk_next(&w, &n);) {
		s.len = w.depth - 1;
		ok = path_push(&s, p->nodes[n].frame);
		if (ok)
			put_sample(b, &s, &p->nodes[n], weights, unit, &first);
	}
	free(s.frames);
	return ok;
}

/* "MainThread (1234)", after its process's label when processes are
 * kept apart ("process 99 (python3 app.py)" alone for a merged one). */
static void thread_name(struct pyd_buf *b, const struct pyd_profile *p,
                        const struct pyd_prof_thread *t)
{
	char name[512], proc[384] = "";

	if (p->by_process)
		pyd_prof_process_label(p, t->process, proc, sizeof proc);
	if (proc[0] && !t->tid)
		snprintf(name, sizeof name, "%s", proc);
	else if (t->tid && t->name[0])
		snprintf(name, sizeof name, "%s%s%s (%lld)", proc,
		         proc[0] ? ": " : "", t->name, (long long)t->tid);
	else if (t->tid)
		snprintf(name, sizeof name, "%s%sThread %lld", proc,
		         proc[0] ? ": " : "", (long long)t->tid);
	else
		snprintf(name, sizeof name, "%s", t->name[0] ? t->name : "?");
	pyd_buf_json_str(b, name);
}

static void profile_json(struct pyd_buf *b, const struct pyd_profile *p,
                         const struct pyd_prof_thread *t)
{
	double unit = p->meta.interval_s > 0 ? p->meta.interval_s : 0;
	uint64_t total = p->nodes[t->node].total;

	PUT(b, "{\"type\": \"sampled\", \"name\": ");
	thread_name(b, p, t);
	pyd_buf_printf(b, ", \"unit\": \"%s\", \"startValue\": 0, ",
	               unit ? "seconds" : "none");
	if (unit)
		pyd_buf_printf(b, "\"endValue\": %.9g", (double)total * unit);
	else
		pyd_buf_printf(b, "\"endValue\": %llu",
		               (unsigned long long)total);
	PUT(b, ",\n   \"samples\": [");
	if (!thread_stacks(b, p, t->node, false, unit))
		b->failed = true;
	PUT(b, "],\n   \"weights\": [");
	if (!thread_stacks(b, p, t->node, true, unit))
		b->failed = true;
	PUT(b, "]}");
}

/* The thread with the most samples is the one worth showing first. */
static size_t busiest_thread(const struct pyd_profile *p)
{
	size_t best = 0;

	for (size_t i = 1; i < p->nthreads; i++)
		if (p->nodes[p->threads[i].node].total >
		    p->nodes[p->threads[best].node].total)
			best = i;
	return best;
}

void pyd_report_prof_speedscope(struct pyd_buf *b, const struct pyd_profile *p,
                                size_t limit)
{
	(void)limit;
	char name[96];

	PUT(b, "{\"$schema\": "
	       "\"https://www.speedscope.app/file-format-schema.json\",\n");
	snprintf(name, sizeof name, "pystack-dump %s, pid %d (%s)",
	         pyd_sample_mode_name(p->meta.mode), p->meta.pid,
	         p->meta.python_version ? p->meta.python_version : "?");
	PUT(b, " \"name\": ");
	pyd_buf_json_str(b, name);
	PUT(b, ",\n \"exporter\": \"pystack-dump@" PYD_VERSION "\",\n");
	pyd_buf_printf(b, " \"activeProfileIndex\": %zu,\n",
	               p->nthreads ? busiest_thread(p) : 0);
	PUT(b, " \"shared\": {\"frames\": [");
	for (size_t i = 0; i < p->nframes; i++) {
		pyd_buf_printf(b, "%s", i ? ",\n  " : "\n  ");
		frame_json(b, &p->frames[i]);
	}
	PUT(b, "]},\n \"profiles\": [");
	for (size_t i = 0; i < p->nthreads; i++) {
		pyd_buf_printf(b, "%s", i ? ",\n  " : "\n  ");
		profile_json(b, p, &p->threads[i]);
	}
	PUT(b, "]}\n");
}
