/*
 * The sampler: takes samples of a live target (without stopping it) into
 * a profile, as its mode's row says (modes.h).  Each round asks for one
 * batched read of every node seen in the previous round (thread states
 * and their frames) and only reads on its own where the stack changed, so
 * a steady stack costs one read.
 */
#ifndef PYD_PROFILE_SAMPLER_H
#define PYD_PROFILE_SAMPLER_H

#include "profile.h"

struct pyd_sampler;

/* Samples go to process index process of prof (pyd_profile_process).
 * PYD_E_UNSUPPORTED for async mode where tasks cannot be decoded, for
 * exception mode where the layout has no thread exception state. */
enum pyd_err pyd_sampler_open(struct pyd_session *s, enum pyd_sample_mode mode,
                              struct pyd_profile *prof, uint32_t process,
                              struct pyd_sampler **out);
void pyd_sampler_close(struct pyd_sampler *sp);

/*
 * One round: record the stacks the mode asks for (*nstacks of them).
 * PYD_E_EXITED when the target is gone; another error means the round
 * failed (a stack changed under every retry), which a profiler counts
 * and goes on.
 */
enum pyd_err pyd_sample(struct pyd_sampler *sp, unsigned *nstacks);
/* The same for a round that starts at now (CLOCK_MONOTONIC ns), which a
 * caller that reads the clock anyway passes on: at the fastest rate
 * a look at the clock is a fair part of a round. */
enum pyd_err pyd_sample_at(struct pyd_sampler *sp, int64_t now,
                           unsigned *nstacks);

/* How long and how fast pyd_sample_loop samples. */
struct pyd_sample_loop {
	double rate;         /* rounds per second; 0: as fast as possible */
	uint64_t max_rounds; /* 0: no limit */
	double max_seconds;  /* 0: no limit */
	/* Polled every round (optional): true ends the loop (Ctrl-C). */
	bool (*stop)(void *ctx);
	/* Called after every round (optional): a status line, say. */
	void (*tick)(void *ctx, const struct pyd_prof_meta *m);
	/* Takes the rounds instead of pyd_sample_at(sp) (optional; sp is
	 * then NULL): over several samplers, say; now as pyd_sample_at's.
	 * Returns as pyd_sample does. */
	enum pyd_err (*round)(void *ctx, int64_t now, unsigned *nstacks);
	void *ctx;
};

enum pyd_sample_end {
	PYD_END_ROUNDS,  /* max_rounds taken */
	PYD_END_TIME,    /* max_seconds passed */
	PYD_END_STOPPED, /* stop() said so */
	PYD_END_EXITED,  /* the target exited */
	PYD_END_NOMEM,
};

/*
 * Sample at the rate asked until one of the ends; ticks that pass while a
 * round runs late are counted as missed, not made up.  Fills m's ticks,
 * samples, errors, missed, duration_s and interval_s.
 */
enum pyd_sample_end pyd_sample_loop(struct pyd_sampler *sp,
				    const struct pyd_sample_loop *l,
				    struct pyd_prof_meta *m);
/* "duration reached", "interrupted", ... for a summary line. */
const char *pyd_sample_end_text(enum pyd_sample_end e);

#endif
