/*
 * Greenlets as text and JSON (report.h).
 */
#include "report.h"


const char *pyd_greenlet_state_name(enum pyd_greenlet_state st)
{
	static const char *const names[] = {
	    [PYD_GREENLET_RUNNING] = "running",
	    [PYD_GREENLET_SUSPENDED] = "suspended",
	    [PYD_GREENLET_UNSTARTED] = "unstarted",
	    [PYD_GREENLET_DEAD] = "dead",
	};
	return names[st];
}

/* "Waiting in Event.wait(<Event object at 0x...>)" */
static void waiting_text(struct pyd_buf *b, const struct pyd_call *c)
{
	PUT(b, "  Waiting in ");
	pyd_buf_str(b, c->function);
	PUT(b, "(");
	for (size_t i = 0; i < c->nargs; i++) {
		if (i)
			PUT(b, ", ");
		pyd_buf_str(b, c->args[i]);
	}
	if (c->more)
		PUT(b, ", ...");
	PUT(b, ")\n");
}

static void waiting_json(struct pyd_buf *b, const struct pyd_call *c)
{
	PUT(b, ", \"waiting\": ");
	if (!c) {
		PUT(b, "null");
		return;
	}
	PUT(b, "{\"function\": ");
	pyd_buf_json_str(b, c->function);
	PUT(b, ", \"args\": [");
	for (size_t i = 0; i < c->nargs; i++) {
		if (i)
			PUT(b, ", ");
		pyd_buf_json_str(b, c->args[i]);
	}
	pyd_buf_printf(b, "], \"more_args\": %s}", c->more ? "true" : "false");
}

static void greenlet_text(struct pyd_buf *b, const struct pyd_greenlet *g,
			  const struct pyd_report_opts *o)
{
	/* Put, not printf: a thousand greenlets are some 8,000 pieces. */
	PUT(b, "\nGreenlet ");
	pyd_buf_hex(b, g->id);
	pyd_buf_str(b, g->main ? " (main, " : " (");
	pyd_buf_str(b, pyd_greenlet_state_name(g->state));
	if (g->thread) {
		PUT(b, ", thread ");
		pyd_buf_i64(b, g->thread);
	}
	if (g->parent) {
		PUT(b, ", parent ");
		pyd_buf_hex(b, g->parent);
	}
	if (g->spawned) {
		PUT(b, ", runs ");
		pyd_buf_str(b, g->spawned);
	}
	PUT(b, ")\n");
	if (g->state == PYD_GREENLET_RUNNING)
		PUT(b, "  (its stack is its thread's, above)\n");
	else if (g->state == PYD_GREENLET_SUSPENDED && !g->nframes &&
		 !g->error)
		PUT(b, "  (no Python frames)\n");
	if (g->nframes)
		PUT(b, "Traceback (most recent call last):\n");
	for (size_t j = g->nframes; j-- > 0;) {
		pyd_report_frame_line(b, &g->frames[j], o);
		if (g->vars)
			pyd_report_vars(b, &g->vars[j]);
	}
	if (g->waiting)
		waiting_text(b, g->waiting);
	if (g->error)
		pyd_buf_printf(b, "  [stack incomplete: %s]\n",
			       pyd_strerror(g->error));
}

void pyd_report_greenlets_text(struct pyd_buf *b,
			       const struct pyd_greenlet_set *g,
			       const struct pyd_report_opts *o)
{
	PUT(b, "\nGreenlets");
	if (g->release[0])
		pyd_buf_printf(b, " (greenlet %s%s)", g->release,
			       g->layout_dwarf ? "; layout from its debug info"
					       : "");
	PUT(b, ":\n");
	if (!g->loaded)
		PUT(b, "  (the target has not imported greenlet)\n");
	else if (g->unknown_layout)
		pyd_buf_printf(b, "  greenlet %s: layout not recognised\n",
			       g->release[0] ? g->release : "(version unknown)");
	for (size_t i = 0; i < g->n; i++)
		greenlet_text(b, &g->g[i], o);
	if (g->truncated)
		pyd_buf_printf(b, "\n[%zu greenlets shown: there are more]\n",
			       g->n);
}

static void greenlet_json(struct pyd_buf *b, const struct pyd_greenlet *g)
{
	pyd_buf_printf(b, "{\"id\": %llu, \"thread\": ",
		       (unsigned long long)g->id);
	if (g->thread)
		pyd_buf_printf(b, "%lld", (long long)g->thread);
	else
		PUT(b, "null");
	pyd_buf_printf(b, ", \"state\": \"%s\", \"main\": %s, \"parent\": ",
		       pyd_greenlet_state_name(g->state),
		       g->main ? "true" : "false");
	if (g->parent)
		pyd_buf_printf(b, "%llu", (unsigned long long)g->parent);
	else
		PUT(b, "null");
	PUT(b, ", \"spawned\": ");
	pyd_buf_json_str(b, g->spawned);
	waiting_json(b, g->waiting);
	PUT(b, ", \"error\": ");
	pyd_buf_json_str(b, g->error ? pyd_strerror(g->error) : NULL);
	PUT(b, ",\n   \"frames\": [");
	for (size_t j = 0; j < g->nframes; j++) {
		if (j)
			PUT(b, ", ");
		pyd_report_json_frame(b, &g->frames[j], false);
		if (g->vars && !b->failed)
			pyd_report_json_vars(b, &g->vars[j]);
	}
	PUT(b, "]}");
}

void pyd_report_greenlets_json(struct pyd_buf *b,
			       const struct pyd_greenlet_set *g,
			       const struct pyd_report_opts *o)
{
	pyd_report_json_head(b, o);
	pyd_buf_printf(b, ", \"greenlet_loaded\": %s, \"greenlet_version\": ",
		       g->loaded ? "true" : "false");
	pyd_buf_json_str(b, g->release[0] ? g->release : NULL);
	pyd_buf_printf(b, ", \"layout_recognised\": %s, \"layout_source\": ",
		       g->unknown_layout ? "false" : "true");
	pyd_buf_json_str(b, !g->loaded || g->unknown_layout ? NULL
			    : g->layout_dwarf			 ? "debug info"
								 : "table");
	pyd_buf_printf(b, ", \"truncated\": %s", g->truncated ? "true" : "false");
	PUT(b, ",\n \"greenlets\": [");
	for (size_t i = 0; i < g->n; i++) {
		pyd_buf_put(b, i ? ",\n  " : "\n  ", i ? 4 : 3);
		greenlet_json(b, &g->g[i]);
	}
	if (g->n)
		PUT(b, "\n ");
	PUT(b, "]");
	pyd_report_json_corrupt(b, o);
	PUT(b, "}\n");
}
