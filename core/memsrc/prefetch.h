/*
 * A memory source that reads, in one batch at the start of a pass, what
 * the last pass read.  A sampler's round walks nearly the same objects
 * every time -- a thousand tasks, their coroutines and frames, their
 * names -- through tens of thousands of small reads, a syscall each.
 * Merged into the few hundred runs of memory they fall in, they are one
 * process_vm_readv.  Reads the batch does not hold go to the source
 * beneath and join the next pass's batch; runs no read used are dropped.
 *
 * What it serves is as old as the pass: every read of a pass sees the
 * target's memory of one moment, which is what a sample should be.
 */
#ifndef PYD_MEMSRC_PREFETCH_H
#define PYD_MEMSRC_PREFETCH_H

#include "../arena.h"
#include "layer.h"

struct pyd_prefetch_run {
	uint64_t addr;
	size_t len;
	const uint8_t *data; /* its bytes, if ok */
	const uint8_t *kept; /* as struct pyd_prefetch_range's */
	bool ok;             /* the batch read it */
	bool used;           /* a read of this pass hit it */
};

/* Where a page's runs start, learnt by a search: direct-mapped by page
 * number. */
struct pyd_prefetch_slot {
	uint64_t page; /* page number + 1 */
	uint32_t run;  /* the first run that ends past its start */
	uint32_t gen;  /* the batch that set it: empty if not this one */
};

struct pyd_prefetch_range {
	uint64_t addr;
	size_t len;
	/* A run an earlier batch read, kept (keep): its bytes, in that
	 * batch's buffer (NULL: to be read). */
	const uint8_t *kept;
};

struct pyd_prefetch {
	struct pyd_layer layer; /* read through layer.src */
	struct pyd_prefetch_run *runs; /* sorted, disjoint */
	size_t nruns, runs_cap;
	uint8_t *buf; /* what this batch read (not keep) */
	size_t buf_cap;
	/* What every batch read (keep), which kept runs point into: never
	 * copied, so a read-ahead's pages are each written once, by the
	 * read, and past the arena's first chunks on huge pages. */
	struct pyd_arena held;
	size_t held_bytes; /* the batches' bytes in it */
	struct pyd_prefetch_range *missed; /* this pass's, for the next */
	size_t nmissed, missed_cap;
	struct pyd_prefetch_range *next; /* the next batch, being built */
	size_t next_cap;
	struct pyd_iov *iov;
	size_t iov_cap;
	struct pyd_prefetch_slot *slots; /* PREFETCH_SLOTS of them */
	uint32_t gen; /* of this batch's slots */
	/* A read the batch misses fails (PYD_E_READ), read by the next
	 * pass, instead of being read now: a dry run of a decoder learns
	 * what it will read, a level of its objects a pass. */
	bool dry;
	/* Runs stay in the next batch whether used or not, as they were
	 * read, not read again: a read-ahead whose dry runs skip what they
	 * read whole keeps it for the last.  Its batches then hold what a
	 * walk reads in the order the walk reads it (the thread states
	 * before their frames), each level a batch later; re-reading every
	 * level in each batch cost a 100-thread dump twice its reads. */
	bool keep;
	/* Reads this pass wanted, direct-mapped by address: a hundred
	 * objects of one type want its reads once, not a hundred times. */
	struct pyd_prefetch_wanted {
		uint64_t addr;
		size_t len;
		size_t pass;
	} wanted[256];
	size_t pass; /* passes begun, + 1 */
	/* Reads a dry run missed, each one, wanted before or not: a run
	 * that read its object whole misses none. */
	size_t nfailed;
	uint32_t *iov_run; /* the run of each iov of a batch */
	size_t iov_run_cap;
	size_t last; /* the run the last read found */
};

void pyd_prefetch_init(struct pyd_prefetch *p, const struct pyd_memsrc *inner);
/* Start a pass: read what the last pass read, in one batch.
 * PYD_E_EXITED if the process is gone; a run that cannot be read is
 * left to the source beneath. */
enum pyd_err pyd_prefetch_pass(struct pyd_prefetch *p);
/* Read [addr, addr + len) in the next pass's batch too (as a read the
 * batch missed is); nothing if it is over 256 KiB. */
void pyd_prefetch_want(struct pyd_prefetch *p, uint64_t addr, size_t len);
/* A dry run's want of what it has not read yet: counted as a miss of
 * the object it runs (nfailed), so that it runs again next pass. */
void pyd_prefetch_missed(struct pyd_prefetch *p, uint64_t addr, size_t len);
void pyd_prefetch_free(struct pyd_prefetch *p);

#endif
