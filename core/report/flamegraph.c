/*
 * An interactive flame graph: one self-contained HTML page (the template
 * core/report/flamegraph.html, embedded at build time) with the profile
 * as JSON in a script element.  The page draws on a canvas, so it stays
 * usable with hundreds of thousands of nodes.
 *
 * The data (docs/profile-formats.md): meta, frames as [name, label, kind],
 * threads as [tid, name, node, process label or null], and the nodes in depth-first order as
 * columns (frame, parent, total, self, await), thread nodes with frame -1.
 * Subtrees without samples are left out.  A differential graph (diff)
 * adds "diff" {base_samples} and a column base: the same path's samples
 * in the profile compared against.
 */
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "flamegraph_html.h"
#include "report.h"


/* The nodes with samples in depth-first order; new_of maps back. */
struct order {
	uint32_t *nodes, *new_of;
	uint32_t n;
};

static bool order_nodes(const struct pyd_profile *p, struct order *o)
{
	o->nodes = malloc((p->nnodes + 1) * sizeof *o->nodes);
	o->new_of = malloc((p->nnodes + 1) * sizeof *o->new_of);
	o->n = 0;
	if (!o->nodes || !o->new_of || !p->nnodes)
		return o->nodes && o->new_of;
	o->new_of[0] = 0;
	o->nodes[o->n++] = 0;
	/* A node without samples has none below it either. */
	struct pyd_prof_walk w;
	uint32_t n;
	for (pyd_prof_walk_start(&w, p, 0); pyd_prof_walk_next(&w, &n);)
		if (p->nodes[n].total) {
			o->new_of[n] = o->n;
			o->nodes[o->n++] = n;
		}
	return true;
}

static void meta_json(struct pyd_buf *b, const struct pyd_profile *p)
{
	const struct pyd_prof_meta *m = &p->meta;

	pyd_buf_printf(b, "{\"meta\": {\"pid\": %d, \"python\": ", m->pid);
	pyd_buf_json_str(b, m->python_version);
	pyd_buf_printf(
	    b,
	    ", \"mode\": \"%s\", \"rate\": %.6g, \"duration\": %.6g, "
	    "\"interval\": %.6g, \"start_us\": %llu, \"ticks\": %llu, "
	    "\"samples\": %llu, \"errors\": %llu, \"missed\": %llu, "
	    "\"cpu_samples\": %llu, \"await_samples\": %llu, "
	    "\"lines\": %s, \"truncated\": %s, \"version\": \"%s\"},\n",
	    pyd_sample_mode_name(m->mode), m->rate_hz, m->duration_s,
	    m->interval_s, (unsigned long long)m->start_unix_us,
	    (unsigned long long)m->ticks, (unsigned long long)m->samples,
	    (unsigned long long)m->errors, (unsigned long long)m->missed,
	    (unsigned long long)m->cpu_samples,
	    (unsigned long long)m->await_samples, p->lines ? "true" : "false",
	    p->truncated ? "true" : "false", PYD_VERSION);
}

static void frames_json(struct pyd_buf *b, const struct pyd_profile *p)
{
	char label[512];

	PUT(b, "\"frames\": [");
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		bool task = f->kind == PYD_PF_TASK;
		const char *l = pyd_prof_frame_label(f, label, sizeof label);
		pyd_buf_printf(b, "%s", i ? ",\n[" : "\n[");
		pyd_buf_json_str(b, task          ? l
		                    : f->qualname ? f->qualname
		                                  : f->function);
		PUT(b, ", ");
		pyd_buf_json_str(b, l);
		pyd_buf_printf(b, "%s", task ? ", 1]" : ", 0]");
	}
	PUT(b, "],\n");
}

static void threads_json(struct pyd_buf *b, const struct pyd_profile *p,
                         const struct order *o)
{
	bool first = true;
	char label[512];

	PUT(b, "\"threads\": [");
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct pyd_prof_thread *t = &p->threads[i];
		if (!p->nodes[t->node].total)
			continue;
		pyd_buf_printf(b, "%s[%lld, ", first ? "" : ", ",
		               (long long)t->tid);
		first = false;
		pyd_buf_json_str(b, t->name);
		pyd_buf_printf(b, ", %u, ", o->new_of[t->node]);
		if (p->by_process)
			pyd_buf_json_str(b, pyd_prof_process_label(
			                        p, t->process, label, sizeof label));
		else
			PUT(b, "null");
		PUT(b, "]");
	}
	PUT(b, "],\n");
}

enum column { COL_FRAME, COL_PARENT, COL_TOTAL, COL_SELF, COL_AWAIT, COL_BASE };

/* A differential graph's other profile: per node of p, the samples of
 * the same path in it. */
struct base {
	const uint64_t *total;
	uint64_t samples;
};

static void column_json(struct pyd_buf *b, const struct pyd_profile *p,
                        const struct order *o, const struct base *base,
                        enum column c)
{
	static const char *const names[] = {"frame", "parent", "total", "self",
	                                    "await", "base"};

	pyd_buf_printf(b, "%s\"%s\": [", c ? ",\n" : "", names[c]);
	for (uint32_t i = 0; i < o->n; i++) {
		const struct pyd_prof_node *n = &p->nodes[o->nodes[i]];
		const char *sep = i ? "," : "";
		if (c == COL_FRAME || c == COL_PARENT) {
			uint32_t v = c == COL_FRAME ? n->frame
			             : n->parent == PYD_PROF_NONE
			                 ? PYD_PROF_NONE
			                 : o->new_of[n->parent];
			pyd_buf_printf(b, v == PYD_PROF_NONE ? "%s-1" : "%s%u",
			               sep, v);
		} else {
			uint64_t v = c == COL_TOTAL   ? n->total
			             : c == COL_SELF  ? n->self
			             : c == COL_AWAIT ? n->self_await
			                              : base->total[o->nodes[i]];
			pyd_buf_printf(b, "%s%llu", sep, (unsigned long long)v);
		}
	}
	PUT(b, "]");
}

static void data_json(struct pyd_buf *b, const struct pyd_profile *p,
                      const struct order *o, const struct base *base)
{
	meta_json(b, p);
	if (base)
		pyd_buf_printf(b, "\"diff\": {\"base_samples\": %llu},\n",
		               (unsigned long long)base->samples);
	frames_json(b, p);
	threads_json(b, p, o);
	PUT(b, "\"nodes\": {");
	for (enum column c = COL_FRAME; c <= (base ? COL_BASE : COL_AWAIT); c++)
		column_json(b, p, o, base, c);
	PUT(b, "}}");
}

static void page(struct pyd_buf *b, const struct pyd_profile *p,
                 const struct base *base)
{
	struct order o;
	struct pyd_buf data = {0};

	if (order_nodes(p, &o))
		data_json(&data, p, &o, base);
	else
		data.failed = true;
	pyd_prof_page(b, (const char *)flamegraph_html, &data);
	pyd_buf_free(&data);
	free(o.nodes);
	free(o.new_of);
}

void pyd_report_prof_flamegraph(struct pyd_buf *b, const struct pyd_profile *p,
                                size_t limit)
{
	(void)limit;
	page(b, p, NULL);
}

void pyd_report_flamegraph_diff(struct pyd_buf *b, const struct pyd_profile *p,
                                const uint64_t *base_total,
                                uint64_t base_samples)
{
	page(b, p, &(struct base){base_total, base_samples});
}
