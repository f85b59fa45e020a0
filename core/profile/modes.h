/*
 * Sampling modes, as a table: one row per mode says which threads its
 * rounds walk, what they read besides the stacks, how a round records its
 * samples, and what the reports call what it sampled.  The sampler's loop
 * branches on what a row says, never on which mode it is; -m, every
 * --help, the man page, the completions and the reports read the rows.
 *
 * A new mode is a row (modes.c) plus, where the thread round does not
 * do, its own round or recording function (profile/sample_*.c).
 */
#ifndef PYD_PROFILE_MODES_H
#define PYD_PROFILE_MODES_H

#include <stdbool.h>

#include "profile.h"

/* Which threads a round walks. */
enum pyd_mode_pick {
	PYD_PICK_ALL,    /* every thread */
	PYD_PICK_ON_CPU, /* those the OS has on a CPU at the tick */
	/* the one holding the GIL, as the batch read it (PYD_READ_GIL) */
	PYD_PICK_GIL_HOLDER,
	/* those raising or handling an exception, by the fields the batch
	 * read (PYD_READ_EXC) */
	PYD_PICK_IN_EXCEPTION,
	PYD_PICK_NONE, /* none: the mode's round samples units of its own */
};

/* What a round reads besides the stacks (a row's reads, or'ed). */
enum {
	PYD_READ_GIL = 1,         /* each interpreter's GIL, first in the batch */
	PYD_READ_EXC = 2,         /* each thread's exception fields, in the batch */
	PYD_READ_GIL_WAITERS = 4, /* who waits for the GIL: the kernel is asked
	                           * every 0.1 s (the summary's contention) */
	PYD_READ_RUN_STATE = 8,   /* each thread's run state, every round */
};

struct pyd_sampler;
struct pyd_sampled_thread;

struct pyd_sample_mode_row {
	const char *name; /* -m NAME */
	/* What it samples, for --help: lines of up to 44 columns */
	const char *help;
	enum pyd_mode_pick pick;
	unsigned reads; /* PYD_READ_* */
	/* Threads never seen on a CPU are told apart as idle (the OS is
	 * asked every 10 ms about those): false where every thread's
	 * stack counts, asleep or not (greenlet mode's hubs). */
	bool idle_threads;
	/*
	 * Units of its own that wait, counted apart from those running
	 * (self_await, await_samples): "task", "greenlet"; NULL for a mode
	 * of threads alone.  The reports' words for them: the table's
	 * "<running> on CPU ..., <waiting>: ..." line, the title and column
	 * of its sites, and the summary's line (%llu running, %llu waiting).
	 */
	const char *unit;
	const char *running, *waiting;
	const char *sites_title, *sites_column;
	const char *summary;
	/* Said when a run took rounds but found no unit (%d: the pid). */
	const char *none_found;
	/* Why a target cannot be sampled so (%s: its Python version). */
	const char *refusal;
	/*
	 * The sampler's, for this mode: refuse a target it cannot sample
	 * (PYD_E_UNSUPPORTED) and set up what it keeps (NULL: any target
	 * does); take one round, once the thread list is fresh; count one
	 * walked thread's stack (NULL: as the thread's own sample).
	 */
	enum pyd_err (*open)(struct pyd_sampler *sp);
	enum pyd_err (*round)(struct pyd_sampler *sp, unsigned *nstacks);
	enum pyd_err (*record)(struct pyd_sampler *sp,
	                       struct pyd_sampled_thread *t);
};

/* Every mode, indexed by enum pyd_sample_mode; the help lists them in
 * this order. */
extern const struct pyd_sample_mode_row pyd_sample_modes[PYD_SAMPLE_MODES];

/* Mode m's row; wall's for a value out of range (a corrupt file's). */
static inline const struct pyd_sample_mode_row *
pyd_sample_mode(enum pyd_sample_mode m)
{
	return &pyd_sample_modes[(unsigned)m < PYD_SAMPLE_MODES ? m : 0];
}

/* "wall", "cpu", ...; "unknown" for a value out of range. */
const char *pyd_sample_mode_name(enum pyd_sample_mode m);
/* The mode of that name; false if there is none. */
bool pyd_sample_mode_named(const char *name, enum pyd_sample_mode *m);

#endif
