/*
 * One stack from a thread's Python frames and its native frames
 * (report.h: pyd_merge_stacks, pyd_native_of).
 *
 * The Python frames fall into runs, one per activation of the
 * evaluation loop: a run ends (outwards) at an entry frame, where C code
 * called into the interpreter.  Runs and evaluation-loop frames pair up
 * from the innermost, so runs with no loop frame among the native ones
 * (a backtrace cut short) are the outermost -- except where an OS thread
 * holds several thread states (it entered sub-interpreters): there the
 * runs of all of them share its native frames, and each pairs with the
 * loop frame its C-stack shim lies in.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Runs of t's Python frames: each ends (outwards) at an entry frame; the
 * frames after the last entry make one more. */
static size_t count_runs(const struct pyd_thread *t)
{
	size_t n = 0;
	for (size_t j = 0; j < t->nframes; j++)
		n += t->frames[j].entry || j + 1 == t->nframes;
	return n;
}

/*
 * The evaluation-loop frame of nf that runs run r of t (runs from the
 * innermost), in loop_of[r] (-1: none).  A thread state that shares its
 * OS thread with others' (t->shared) is paired by address: each run's
 * C-stack shim lies in the stack frame of its loop, between the loop's
 * stack pointer and its caller's; every other thread is paired by count,
 * the k-th run with the k-th loop frame from the innermost.
 */
static void pair_runs(const struct pyd_thread *t,
		      const struct pyd_native_frame *nf, size_t n,
		      long *loop_of, size_t nruns)
{
	const char *loop = pyd_native_loop_name(nf, n);
	size_t r = 0;
	for (size_t j = 0; j < t->nframes && r < nruns; j++) {
		if (!t->frames[j].entry && j + 1 < t->nframes)
			continue;
		uint64_t at = t->frames[j].entry_at;
		loop_of[r] = -1;
		for (size_t i = 0; t->shared && at && i < n; i++)
			if (pyd_native_is_loop(&nf[i], loop) && nf[i].sp &&
			    at >= nf[i].sp && (i + 1 == n || at < nf[i + 1].sp))
				loop_of[r] = (long)i;
		r++;
	}
	if (t->shared)
		return;
	r = 0;
	for (size_t i = 0; i < n && r < nruns; i++)
		if (pyd_native_is_loop(&nf[i], loop))
			loop_of[r++] = (long)i;
	while (r < nruns)
		loop_of[r++] = -1;
}

/* Does native frame i belong to t's runs?  It does unless t shares its
 * OS thread and the loop frame it is under (the first outwards of it, or
 * else the outermost) runs another thread state's Python. */
static bool owns_native(const struct pyd_thread *t,
			const struct pyd_native_frame *nf, size_t n,
			const long *loop_of, size_t nruns, size_t i)
{
	if (!t->shared)
		return true;
	const char *loop = pyd_native_loop_name(nf, n);
	long under = -1;
	for (size_t k = i; k < n && under < 0; k++)
		if (pyd_native_is_loop(&nf[k], loop))
			under = (long)k;
	for (size_t k = n; under < 0 && k-- > 0;)
		if (pyd_native_is_loop(&nf[k], loop))
			under = (long)k;
	if (under < 0)
		return true;
	for (size_t r = 0; r < nruns; r++)
		if (loop_of[r] == under)
			return true;
	return false;
}

long pyd_native_of(const struct pyd_thread *t, size_t j,
		   const struct pyd_native_frame *nf, size_t n)
{
	size_t nruns = count_runs(t), run = 0;
	long *loop_of = malloc((nruns ? nruns : 1) * sizeof *loop_of);
	if (!loop_of)
		return -1;
	pair_runs(t, nf, n, loop_of, nruns);
	for (size_t i = 0; i < j && i < t->nframes; i++)
		run += t->frames[i].entry;
	long at = run < nruns ? loop_of[run] : -1;
	free(loop_of);
	return at;
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
	size_t nruns = count_runs(t), k = 0, next = 0, run = 0;
	long *loop_of = malloc((nruns ? nruns : 1) * sizeof *loop_of);
	if (!loop_of)
		return 0;
	pair_runs(t, nf, n, loop_of, nruns);
	for (size_t i = 0; i < n; i++) {
		if (!owns_native(t, nf, n, loop_of, nruns, i))
			continue;
		/* the runs this loop frame runs: the next one, if paired */
		if (run < nruns && loop_of[run] == (long)i) {
			size_t k0 = k;
			k = run_frames(t, next, false, out, k);
			next += k - k0;
			run++;
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
	free(loop_of);
	return k;
}
