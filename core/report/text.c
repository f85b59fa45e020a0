#include <stdlib.h>
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
	pyd_buf_printf(b, " (%s%s%s)\n", t->holds_gil ? "holds the GIL, " : "",
		       t->waits_gil ? "waiting for the GIL"
				    : pyd_run_state_name(t->run),
		       t->in_exception ? ", handling an exception" : "");
}

static void source_lines(struct pyd_buf *b, const struct pyd_frame *f,
			 const struct pyd_report_opts *o)
{
	/* In pieces: as one printf, these lines were a quarter of a plain
	 * dump's instructions (bench_dump.py). */
	pyd_buf_put(b, "File \"", 6);
	pyd_buf_str(b, f->file);
	pyd_buf_put(b, "\", line ", 8);
	pyd_buf_i64(b, f->line);
	pyd_buf_put(b, ", in ", 5);
	pyd_buf_str(b, f->qualname ? f->qualname : f->function);
	pyd_buf_put(b, "\n", 1);
	const char *src = o->source_line && f->line > 0
				  ? o->source_line(o->source_ctx, f->file, f->line)
				  : NULL;
	if (!src)
		return;
	while (*src == ' ' || *src == '\t')
		src++;
	if (*src) {
		pyd_buf_put(b, "    ", 4);
		pyd_buf_str(b, src);
		pyd_buf_put(b, "\n", 1);
	}
}

/* Under a frame: its arguments, then its other locals, one a line. */
static void vars_lines(struct pyd_buf *b, const struct pyd_frame_vars *fv)
{
	if (fv->unreadable) {
		pyd_buf_printf(b, "    (variables unreadable)\n");
		return;
	}
	for (int args = 1; args >= 0; args--) {
		bool head = false;
		for (size_t i = 0; i < fv->n; i++) {
			if (fv->v[i].argument != (args == 1))
				continue;
			if (!head)
				pyd_buf_printf(b, "    %s:\n",
					       args ? "Arguments" : "Locals");
			head = true;
			pyd_buf_printf(b, "      %s = %s\n", fv->v[i].name,
				       fv->v[i].repr);
		}
	}
}

static void frame_lines(struct pyd_buf *b, const struct pyd_thread *t,
			size_t j, const struct pyd_report_opts *o)
{
	pyd_report_frame_line(b, &t->frames[j], o);
	if (t->vars)
		vars_lines(b, &t->vars[j]);
}

void pyd_report_frame_line(struct pyd_buf *b, const struct pyd_frame *f,
			   const struct pyd_report_opts *o)
{
	pyd_buf_put(b, "  ", 2);
	source_lines(b, f, o);
}

void pyd_report_frame(struct pyd_buf *b, const struct pyd_thread *t,
		      size_t j, const struct pyd_report_opts *o)
{
	pyd_buf_printf(b, "#%zu ", j);
	source_lines(b, &t->frames[j], o);
}

void pyd_report_vars(struct pyd_buf *b, const struct pyd_frame_vars *fv)
{
	if (!fv->unreadable && !fv->n)
		pyd_buf_printf(b, "    (no variables bound)\n");
	vars_lines(b, fv);
}


static void thread_native(struct pyd_buf *b, const struct pyd_thread *t,
			  const struct pyd_native_frame *nf, size_t n,
			  bool keep_interp, const struct pyd_report_opts *o);

static void thread_text(struct pyd_buf *b, const struct pyd_thread *t,
			size_t ninterps, const struct pyd_report_opts *o)
{
	pyd_buf_put(b, "\n", 1);
	thread_header(b, t, ninterps);
	if (t->nnative) {
		thread_native(b, t, t->native, t->nnative, o->native_all, o);
		if (t->error)
			pyd_buf_printf(b, "  [stack incomplete: %s]\n",
				       pyd_strerror(t->error));
		return;
	}
	if (t->native_error)
		pyd_buf_printf(b, "  [native stack unreadable: %s]\n",
			       pyd_strerror(t->native_error));
	if (t->nframes == 0 && !t->error) {
		pyd_buf_printf(b, "  (no Python frames)\n");
		return;
	}
	if (t->nframes)
		pyd_buf_printf(b, "Traceback (most recent call last):\n");
	if (t->truncated)
		pyd_buf_printf(b, "  [%zu frames shown: the innermost; the "
				  "stack goes deeper]\n", t->nframes);
	for (size_t j = t->nframes; j-- > 0;)
		frame_lines(b, t, j, o);
	if (t->error)
		pyd_buf_printf(b, "  [stack incomplete: %s]\n",
			       pyd_strerror(t->error));
	if (t->recovered)
		pyd_buf_printf(b, "  [outer frames read back from the thread's "
				  "data stack: the core lacks its C stack]\n");
}

void pyd_report_text_head(struct pyd_buf *b, const struct pyd_report_opts *o)
{
	if (o->origin)
		pyd_buf_printf(b, "%s: ", o->origin);
	/* A core that names no file leaves the interpreter's file unknown. */
	pyd_buf_printf(b, "Python %s%s (%s)\n", o->python_version,
		       o->free_threaded ? ", free-threading build" : "",
		       o->binary && *o->binary ? o->binary : "its file unknown");
}

void pyd_report_text(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o)
{
	pyd_report_text_head(b, o);
	for (size_t i = 0; i < d->nthreads; i++)
		thread_text(b, &d->threads[i], d->ninterps, o);
}


/* A native frame: "#N 0xPC in FUNCTION (LIBRARY) at FILE:LINE", the
 * parts it has. */
static void native_line(struct pyd_buf *b, const struct pyd_native_frame *f,
			size_t i)
{
	pyd_buf_printf(b, "  #%-3zu 0x%016llx in %s", i,
		       (unsigned long long)f->pc,
		       f->function ? f->function : "??");
	if (f->library)
		pyd_buf_printf(b, " (%s)", f->library);
	if (f->file)
		pyd_buf_printf(b, " at %s:%d", f->file, f->line);
	pyd_buf_put(b, "\n", 1);
}

/*
 * A thread as one stack, outermost first: its native frames nf with the
 * Python frames each evaluation-loop frame runs (pyd_merge_stacks);
 * Python frames with no loop frame in nf come first, under a note.
 */
static void thread_native(struct pyd_buf *b, const struct pyd_thread *t,
			  const struct pyd_native_frame *nf, size_t n,
			  bool keep_interp, const struct pyd_report_opts *o)
{
	struct pyd_merged *m = malloc((t->nframes + n + 1) * sizeof *m);
	if (!m) {
		b->failed = true;
		return;
	}
	size_t k = pyd_merge_stacks(t, nf, n, keep_interp, m);
	pyd_buf_printf(b, "Traceback (most recent call last):\n");
	if (k && m[k - 1].orphan)
		pyd_buf_printf(b, "  (no evaluation-loop frame shown for:)\n");
	for (size_t i = k; i-- > 0;) {
		if (m[i].native)
			native_line(b, &nf[m[i].index], m[i].index);
		else
			frame_lines(b, t, m[i].index, o);
	}
	free(m);
}
