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
	pyd_buf_printf(b, " (%s%s)\n", t->holds_gil ? "holds the GIL, " : "",
		       pyd_run_state_name(t->run));
}

static void source_lines(struct pyd_buf *b, const struct pyd_frame *f,
			 const struct pyd_report_opts *o)
{
	pyd_buf_printf(b, "File \"%s\", line %d, in %s\n", f->file, f->line,
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
	pyd_buf_put(b, "  ", 2);
	source_lines(b, &t->frames[j], o);
	if (t->vars)
		vars_lines(b, &t->vars[j]);
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


static void thread_text(struct pyd_buf *b, const struct pyd_thread *t,
			size_t ninterps, const struct pyd_report_opts *o)
{
	pyd_buf_put(b, "\n", 1);
	thread_header(b, t, ninterps);
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
}

void pyd_report_text(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o)
{
	if (o->origin)
		pyd_buf_printf(b, "%s: ", o->origin);
	pyd_buf_printf(b, "Python %s (%s)\n", o->python_version, o->binary);
	for (size_t i = 0; i < d->nthreads; i++)
		thread_text(b, &d->threads[i], d->ninterps, o);
}


/* Where the evaluation loop runs, by name: _PyEval_EvalFrameDefault from
 * 3.6 on (a ".cold" part included), PyEval_EvalFrameEx as a last resort. */
static bool is_eval_loop(const struct pyd_native_frame *f, const char *name)
{
	size_t n = strlen(name);
	return f->function && !strncmp(f->function, name, n) &&
	       (!f->function[n] || f->function[n] == '.');
}

static const char *eval_loop_name(const struct pyd_native_frame *nf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_eval_loop(&nf[i], "_PyEval_EvalFrameDefault"))
			return "_PyEval_EvalFrameDefault";
	return "PyEval_EvalFrameEx";
}

long pyd_native_of(const struct pyd_thread *t, size_t j,
		   const struct pyd_native_frame *nf, size_t n)
{
	const char *loop = eval_loop_name(nf, n);
	size_t run = 0;
	for (size_t i = 0; i < j && i < t->nframes; i++)
		run += t->frames[i].entry;
	for (size_t i = 0; i < n; i++)
		if (is_eval_loop(&nf[i], loop) && run-- == 0)
			return (long)i;
	return -1;
}

/* Python frames lo..hi-1 (innermost first), printed outermost first. */
static void python_frames(struct pyd_buf *b, const struct pyd_thread *t,
			  size_t lo, size_t hi, const struct pyd_report_opts *o)
{
	for (size_t j = hi; j-- > lo;)
		frame_lines(b, t, j, o);
}

/*
 * A thread's native frames, outermost first, each evaluation-loop frame
 * followed by the Python frames its run executes.  A run ends (outwards)
 * at an entry frame; runs and loop frames pair up from the innermost, so
 * runs the debugger showed no loop frame for (a backtrace cut short) are
 * the outermost ones: they come first.
 */
static void thread_native(struct pyd_buf *b, const struct pyd_thread *t,
			  const struct pyd_native_frame *nf, size_t n,
			  const struct pyd_report_opts *o)
{
	const char *loop = eval_loop_name(nf, n);
	size_t *ends = malloc((t->nframes + 1) * sizeof *ends);
	size_t runs = 0, loops = 0, hi = t->nframes;
	if (!ends) {
		b->failed = true;
		return;
	}
	ends[0] = 0;
	for (size_t i = 0; i < t->nframes; i++)
		if (t->frames[i].entry || i + 1 == t->nframes)
			ends[++runs] = i + 1;
	for (size_t i = 0; i < n; i++)
		loops += is_eval_loop(&nf[i], loop);
	pyd_buf_printf(b, "Traceback (most recent call last):\n");
	if (runs > loops) {
		pyd_buf_printf(b, "  (no evaluation-loop frame shown for:)\n");
		python_frames(b, t, ends[loops], hi, o);
		hi = ends[loops];
	}
	for (size_t i = n, run = runs < loops ? runs : loops; i-- > 0;) {
		pyd_buf_printf(b, "  #%-3zu 0x%016llx in %s\n", i,
			       (unsigned long long)nf[i].pc,
			       nf[i].function ? nf[i].function : "??");
		if (!is_eval_loop(&nf[i], loop) || loops-- > run)
			continue;
		python_frames(b, t, ends[--run], hi, o);
		hi = ends[run];
	}
	free(ends);
}

void pyd_report_text_native(struct pyd_buf *b, const struct pyd_dump *d,
			    const struct pyd_report_opts *o, int64_t tid,
			    const struct pyd_native_frame *native, size_t nnative)
{
	if (o->origin)
		pyd_buf_printf(b, "%s: ", o->origin);
	pyd_buf_printf(b, "Python %s (%s)\n", o->python_version, o->binary);
	for (size_t i = 0; i < d->nthreads; i++) {
		const struct pyd_thread *t = &d->threads[i];
		if (t->tid != tid || !nnative || !t->nframes) {
			thread_text(b, t, d->ninterps, o);
			continue;
		}
		pyd_buf_put(b, "\n", 1);
		thread_header(b, t, d->ninterps);
		thread_native(b, t, native, nnative, o);
		if (t->error)
			pyd_buf_printf(b, "  [stack incomplete: %s]\n",
				       pyd_strerror(t->error));
	}
}
