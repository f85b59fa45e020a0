/*
 * One stack from a thread's Python frames and its native frames
 * (report.h: pyd_merge_stacks, pyd_native_of).
 *
 * The Python frames fall into runs, one per activation of the
 * evaluation loop: a run ends (outwards) at an entry frame, where C code
 * called into the interpreter.  Runs and evaluation-loop frames pair up
 * from the innermost, so runs with no loop frame among the native ones
 * (a backtrace cut short) are the outermost.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

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

/* Python frames from `from` to the end of their run, innermost first. */
static size_t run_frames(const struct pyd_thread *t, size_t from, bool orphan,
			 struct pyd_merged *out, size_t k)
{
	for (size_t j = from; j < t->nframes; j++) {
		out[k++] = (struct pyd_merged){.index = j, .orphan = orphan};
		if (t->frames[j].entry)
			break;
	}
	return k;
}

size_t pyd_merge_stacks(const struct pyd_thread *t,
			const struct pyd_native_frame *nf, size_t n,
			bool keep_interp, struct pyd_merged *out)
{
	const char *loop = eval_loop_name(nf, n);
	size_t k = 0, next = 0; /* next: the innermost Python frame left */
	for (size_t i = 0; i < n; i++) {
		if (is_eval_loop(&nf[i], loop) && next < t->nframes) {
			size_t k0 = k;
			k = run_frames(t, next, false, out, k);
			next += k - k0;
			if (!keep_interp)
				continue;
		} else if (nf[i].interp && !keep_interp) {
			continue;
		}
		out[k++] = (struct pyd_merged){.native = true, .index = i};
	}
	while (next < t->nframes) {
		size_t k0 = k;
		k = run_frames(t, next, true, out, k);
		next += k - k0;
	}
	return k;
}
