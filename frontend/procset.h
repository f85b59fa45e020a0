/*
 * The processes one sampling run (pystack-dump sample and top, and so
 * the Python API's Sampler; each profile pystack-dump serve takes) reads:
 * the ones named and,
 * with --subprocesses, every descendant running CPython, found as they
 * start (a look at /proc every 100 ms) and kept in the profile when they
 * exit.  Each has its own memory source, session and sampler; a round
 * samples each in turn.
 */
#ifndef PYD_FRONTEND_PROCSET_H
#define PYD_FRONTEND_PROCSET_H

#include "../core/memsrc/layer.h"
#include "../core/profile/modes.h"
#include "../core/profile/sampler.h"
#include "target.h"

/* Every read through src counted, for the summary's reads per round. */
struct counted {
	struct pyd_layer layer;
	uint64_t reads;
};

struct sampled {
	int pid, ppid;
	char cmdline[256];
	bool sampling; /* else pending: not (yet) readable as Python */
	int64_t seen_ns; /* found, or ran exec */
	struct target t;
	struct counted counted;
	struct pyd_session *sess;
	struct pyd_sampler *sp;
	uint32_t index; /* the profile's, once sampling */
};

/* Descendants that were not sampled, for the summary: the first few. */
#define PROCSET_SKIPPED_SHOWN 16

struct procset {
	struct sampled **v; /* the root first while it runs */
	size_t n, cap;
	struct pyd_profile *prof;
	enum pyd_sample_mode mode;
	bool follow; /* --subprocesses */
	bool all;    /* every process of the machine (serve --all) */
	int root;
	int self;    /* our own pid, never read (all) */
	int64_t scanned_ns;
	uint64_t reads_done; /* of processes gone */
	size_t nskipped;
	char skipped[PROCSET_SKIPPED_SHOWN][512];
	/* procset_open failed for the mode asked (-m async on 3.6), not the
	 * process: *detail says so. */
	bool mode_unsupported;
};

/*
 * Start with process pid (into prof, sampling in mode): open it, find its
 * runtime, open a sampler.  On failure *detail says why and the set is
 * empty again (procset_close still applies).
 */
enum pyd_err procset_open(struct procset *ps, int pid, struct pyd_profile *prof,
                          enum pyd_sample_mode mode, bool follow,
                          char *detail, size_t detailsz);
/* An empty set, to procset_add processes to (follow: with their
 * descendants). */
void procset_init(struct procset *ps, struct pyd_profile *prof,
                  enum pyd_sample_mode mode, bool follow);
/* Add process pid, opened as procset_open opens it (the first added is
 * the root); on failure *detail says why and the set is as it was. */
enum pyd_err procset_add(struct procset *ps, int pid, char *detail,
                         size_t detailsz);
/* Every process of the machine that runs CPython (serve --all), found
 * as --subprocesses finds descendants: the family of init, looked at
 * every 100 ms; those that cannot be read are skipped. A round never
 * ends the run for want of processes: one may start. */
void procset_open_all(struct procset *ps, struct pyd_profile *prof,
                      enum pyd_sample_mode mode);
/* The session of the process named (for its version); NULL once gone. */
struct pyd_session *procset_root_session(const struct procset *ps);
/*
 * One round over every process, as pyd_sample_at does for one (ctx is
 * the procset), at now (CLOCK_MONOTONIC ns): PYD_E_EXITED once no
 * process is left to sample; another error if some process's round
 * failed.
 */
enum pyd_err procset_round(void *ctx, int64_t now, unsigned *nstacks);
/* Memory-source calls of every process so far. */
uint64_t procset_reads(const struct procset *ps);
/* Whether thread tid of the profile's process proc is on a CPU now, as
 * its memory source tells (false if unknown or gone); not a read. */
bool procset_thread_running(const struct procset *ps, uint32_t proc,
                            int64_t tid);
/* Processes sampling now. */
size_t procset_sampling(const struct procset *ps);
void procset_close(struct procset *ps);

#endif
