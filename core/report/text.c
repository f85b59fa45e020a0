#include <string.h>

#include "report.h"

const char *pyd_run_state_name(enum pyd_thread_run r)
{
	return r == PYD_RUN_RUNNING ? "running" : r == PYD_RUN_IDLE ? "idle"
								       : "unknown";
}

static void thread_header(struct pyd_buf *b, const struct pyd_thread *t,
			  size_t ninterps)
{
	pyd_buf_printf(b, "Thread %lld", (long long)t->tid);
	if (t->name[0])
		pyd_buf_printf(b, " \"%s\"", t->name);
	if (ninterps > 1)
		pyd_buf_printf(b, " in interpreter %lld", (long long)t->interp_id);
	pyd_buf_printf(b, " (%s%s)\n", t->holds_gil ? "holds the GIL, " : "",
		       pyd_run_state_name(t->run));
}

static void frame_lines(struct pyd_buf *b, const struct pyd_frame *f,
			const struct pyd_report_opts *o)
{
	pyd_buf_printf(b, "  File \"%s\", line %d, in %s\n", f->file, f->line,
		       f->qualname ? f->qualname : f->function);
	const char *src = o->source_line && f->line > 0
				  ? o->source_line(o->source_ctx, f->file, f->line)
				  : NULL;
	if (!src)
		return;
	while (*src == ' ' || *src == '\t')
		src++;
	if (*src)
		pyd_buf_printf(b, "    %s\n", src);
}

void pyd_report_text(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o)
{
	if (o->origin)
		pyd_buf_printf(b, "%s: ", o->origin);
	pyd_buf_printf(b, "Python %s (%s)\n", o->python_version, o->binary);
	for (size_t i = 0; i < d->nthreads; i++) {
		const struct pyd_thread *t = &d->threads[i];
		pyd_buf_put(b, "\n", 1);
		thread_header(b, t, d->ninterps);
		if (t->nframes == 0 && !t->error) {
			pyd_buf_printf(b, "  (no Python frames)\n");
			continue;
		}
		if (t->nframes)
			pyd_buf_printf(b, "Traceback (most recent call last):\n");
		for (size_t j = t->nframes; j-- > 0;)
			frame_lines(b, &t->frames[j], o);
		if (t->error)
			pyd_buf_printf(b, "  [stack incomplete: %s]\n",
				       pyd_strerror(t->error));
	}
}
