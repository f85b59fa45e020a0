#include "report.h"

static void frame_json(struct pyd_buf *b, const struct pyd_frame *f)
{
	pyd_buf_put(b, "{\"function\": ", 13);
	pyd_buf_json_str(b, f->function);
	pyd_buf_put(b, ", \"qualname\": ", 14);
	pyd_buf_json_str(b, f->qualname);
	pyd_buf_put(b, ", \"file\": ", 10);
	pyd_buf_json_str(b, f->file);
	pyd_buf_printf(b, ", \"line\": %d}", f->line);
}

/* "arguments": {name: repr}, "locals": {name: repr} (null if the
 * frame's variables could not be read). */
static void vars_json(struct pyd_buf *b, const struct pyd_frame_vars *fv)
{
	b->len--; /* reopen the frame's object */
	for (int args = 1; args >= 0; args--) {
		pyd_buf_printf(b, ", \"%s\": ", args ? "arguments" : "locals");
		if (fv->unreadable) {
			pyd_buf_put(b, "null", 4);
			continue;
		}
		pyd_buf_put(b, "{", 1);
		bool first = true;
		for (size_t i = 0; i < fv->n; i++) {
			if (fv->v[i].argument != (args == 1))
				continue;
			if (!first)
				pyd_buf_put(b, ", ", 2);
			first = false;
			pyd_buf_json_str(b, fv->v[i].name);
			pyd_buf_put(b, ": ", 2);
			pyd_buf_json_str(b, fv->v[i].repr);
		}
		pyd_buf_put(b, "}", 1);
	}
	pyd_buf_put(b, "}", 1);
}

static void thread_json(struct pyd_buf *b, const struct pyd_thread *t)
{
	pyd_buf_printf(b, "{\"tid\": %lld, \"interpreter\": %lld, \"name\": ",
		       (long long)t->tid, (long long)t->interp_id);
	pyd_buf_json_str(b, t->name[0] ? t->name : NULL);
	pyd_buf_printf(b, ", \"holds_gil\": %s, \"state\": \"%s\", \"error\": ",
		       t->holds_gil ? "true" : "false", pyd_run_state_name(t->run));
	pyd_buf_json_str(b, t->error ? pyd_strerror(t->error) : NULL);
	pyd_buf_put(b, ", \"frames\": [", 13);
	for (size_t j = 0; j < t->nframes; j++) {
		if (j)
			pyd_buf_put(b, ", ", 2);
		frame_json(b, &t->frames[j]);
		if (t->vars && !b->failed)
			vars_json(b, &t->vars[j]);
	}
	pyd_buf_put(b, "]}", 2);
}

void pyd_report_json(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o)
{
	pyd_buf_printf(b, "{\"pid\": %d, \"source\": ", o->pid);
	pyd_buf_json_str(b, o->source_kind);
	pyd_buf_put(b, ", \"python_version\": ", 20);
	pyd_buf_json_str(b, o->python_version);
	pyd_buf_put(b, ", \"binary\": ", 12);
	pyd_buf_json_str(b, o->binary);
	pyd_buf_put(b, ", \"threads\": [", 14);
	for (size_t i = 0; i < d->nthreads; i++) {
		pyd_buf_put(b, i ? ",\n  " : "\n  ", i ? 4 : 3);
		thread_json(b, &d->threads[i]);
	}
	pyd_buf_put(b, "\n]", 2);
	if (d->has_locals)
		pyd_buf_printf(b, ", \"locals_budget_spent\": %s",
			       d->locals_budget_spent ? "true" : "false");
	pyd_buf_put(b, "}\n", 2);
}
