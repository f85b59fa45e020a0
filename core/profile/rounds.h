/*
 * The sampler's insides, shared by its files: sampler.c (the thread list,
 * the rounds, the loop), batch.c (the batched read and the walk from it),
 * sample_threads.c (the rounds of the thread modes) and sample_units.c
 * (asyncio tasks, greenlets).  Nothing outside profile/ includes it.
 */
#ifndef PYD_PROFILE_ROUNDS_H
#define PYD_PROFILE_ROUNDS_H

#include <time.h>

#include "../memsrc/pagecache.h"
#include "../memsrc/prefetch.h"
#include "../decode/session.h"
#include "profile.h"

struct pyd_sample_mode_row; /* modes.h */

/* Nodes closer than this are read as one range: less than a page, so
 * no page lies wholly between two readable nodes, and the bytes between
 * them are mapped too.  Copying them costs less than another range. */
#define MERGE_GAP 4095
#define NODE_MAX  256
/* A node compared on its own costs about what comparing this many bytes
 * of a run does: a span with more per node is compared node by node. */
#define SPAN_NODE_BYTES 256
/*
 * 3.12+ stacks end in shim frames: one on the thread's C stack (owned by
 * the C stack), and on 3.14+ the thread's base frame.  They cost a range
 * of their own, so they are read only with the list heads, once a
 * millisecond, and served from a copy in between: they live as long as
 * the outermost Python call, and should they change, the copy is stale
 * for at most that long.
 */
/* A round that misses more nodes than COLD_DIRECT (a stack first seen, or
 * one that changed far down) reads the rest through a page cache, a miss
 * COLD_AROUND pages at once: 3.11+ frames lie side by side in the data
 * stack, so a million-frame stack costs some 1,600 reads of 64 KiB, not
 * a million of one frame (and, before 3.11, frame objects made one after
 * another lie close too).  A few misses stay exact reads: a block costs
 * more than a node when a round needs only a few. */
#define COLD_DIRECT 64
#define COLD_PAGES  64
#define COLD_AROUND 16
#define TAIL_MAX   4
#define TAIL_BYTES 128
/* A greenlet's boundary frame: "<greenlet NAME>". */
#define GLABEL_MAX 96
/* Refresh thread names this often. */
#define REFRESH_NS 1000000000LL
/* Check whether threads came or went, and whether code objects were
 * replaced, this often: a thread state freed since can still be walked,
 * and a replaced code object is named after the old one, for up to this
 * long. */
#define HEADS_NS 1000000LL
/* Ask the source whether threads never seen on a CPU are on one this
 * often (one /proc read each): often enough to tell idle threads, which
 * the table leaves out, from any that run a fair share of the time. */
#define RUN_NS 10000000LL

struct pred {
	uint64_t addr;
	uint32_t len;
	uint32_t off;   /* in the batch buffer */
	uint32_t range; /* the batch range holding it; UINT32_MAX: none */
	bool saved;     /* a bottom shim: served from pyd_sampled_thread.tail[slot] */
	uint8_t slot;
};

struct pyd_sampled_thread {
	uint64_t tstate;
	uint64_t next;       /* tstate->next when the list was read */
	uint8_t next_buf[8]; /* and as the batch read it */
	int64_t tid;
	char name[64];
	size_t interp; /* index into the sampler's interpreters */
	struct pred *pred;
	size_t npred, cap;
	bool in_batch;
	bool ran; /* seen on a CPU: no need to ask again */
	/* PYD_PICK_ON_CPU, PYD_READ_RUN_STATE: whether the OS had it on a
	 * CPU this round */
	enum pyd_thread_run run;
	uint8_t tail[TAIL_MAX][TAIL_BYTES]; /* the saved bottom shims */
	/* PYD_READ_EXC: exc.raised, exc.handled, exc.info as read */
	uint8_t exc[3][8];
	/* Its stack, which its walks write in place: the first nmemo frames
	 * are its last walk's (its memo; the <GC> and cut marks come after
	 * them or void it), memo_at[i] of them before node i, and memo_round
	 * the round of that walk.  A round whose nodes from same_from on read
	 * the bytes they read then keeps the frames of those nodes, moved at
	 * most, instead of decoding them again. */
	struct pyd_frame_buf fb;
	size_t nmemo;
	size_t *memo_at;
	size_t nmemo_at, memo_at_cap;
	bool memo_more;
	uint64_t memo_round;
	size_t same_from;
	size_t same_out; /* this round: its outermost frames taken from it */
	/* The batch's bytes from the first to the last byte of its nodes
	 * from span_from on, under plan span_gen, their last range
	 * span_range: one comparison tells the common round's same_from,
	 * unless they lie far apart or the bytes between them change
	 * (span_wide: compared node by node). */
	size_t span_from;
	uint32_t span_lo, span_hi, span_range;
	uint64_t span_gen;
	bool span_wide;
};

struct sinterp {
	uint64_t addr;
	uint64_t head; /* its first thread state when the list was read */
	uint64_t gil_addr;
	size_t gil_len;
	uint64_t gil_struct; /* where its waiters block (pyd_gil_struct) */
	uint8_t head_buf[8], gil_buf[64];
	uint64_t gc_addr;   /* its gc.collecting; 0: not known or not asked */
	uint8_t gc_buf[4];
	uint64_t collector; /* the thread state running the collector, or 0 */
};

struct pyd_sampler {
	struct pyd_session *s;
	struct pyd_profile *prof;
	uint32_t process; /* the profile's index of our process */
	const struct pyd_sample_mode_row *row; /* its mode */
	struct pyd_sampled_thread *th;
	size_t nth, th_cap;
	struct sinterp *in;
	size_t nin, in_cap;
	bool stale;        /* thread list must be read again */
	int64_t refreshed; /* CLOCK_MONOTONIC ns of the last refresh */
	int64_t now;       /* ... and of this round's start */
	struct pyd_iov *iov;
	size_t niov, iov_cap;
	struct pred **sorted; /* the batch's nodes by address */
	size_t nsorted, sorted_cap;
	size_t nfields;     /* iov[0..nfields): GIL, GC, exception fields */
	size_t nranges;     /* iov[nfields..nranges): nodes; then list heads */
	size_t nplan;       /* ... to nplan; then code objects' headers */
	int64_t heads_read; /* CLOCK_MONOTONIC ns the heads were last read */
	int64_t run_asked;  /* ... and the threads' run states asked */
	int64_t gil_asked;  /* ... and who waits for the GIL (gil mode) */
	bool plan_valid;    /* iov and sorted still fit the predictions */
	uint64_t plan_gen;  /* plans made so far */
	uint8_t *buf;
	size_t buf_cap;
	/* The batch's ranges as the previous round read them, under plan
	 * prev_gen in round prev_round: the two buffers swap every round. */
	uint8_t *prev;
	size_t prev_cap;
	uint64_t prev_gen, prev_round;
	uint64_t round; /* rounds taken (thread modes) */
	bool reuse;     /* this round may take frames from the threads' memos */
	size_t nread;   /* iov[0..nread) read whole this round */
	size_t node_len; /* a frame node's bytes (pyd_frame_node_len) */
	/* The walk's copies: its trailing shims (see TAIL_MAX), a node read
	 * on its own; here, not in each walk's reader, which is set up anew
	 * every round. */
	uint8_t tail[TAIL_MAX][TAIL_BYTES];
	uint8_t scratch[NODE_MAX];
	/* The round's misses (COLD_DIRECT), and its page cache: cleared
	 * every round that uses it, as a round's bytes are its own. */
	uint64_t cold_round;
	size_t cold_misses;
	struct pyd_pagecache cold;
	int cold_state; /* 0 not made, 1 made, -1 out of memory */
	struct pyd_frame_buf fb; /* the stacks of tasks and greenlets */
	char cut[48]; /* the function of the frame ending a cut stack */
	char gc[8];   /* "<GC>": a frame's function outlives the round */
	uint64_t last_holder; /* gil mode: the predicted holder */
	/* exception mode: None, once met, and the last value that was not */
	struct pyd_exc_seen exc_seen;
	/* async mode: the last round's reads, read again in one batch, and
	 * the round's task names as the profile keeps them */
	struct pyd_prefetch pf;
	const char **names;
	size_t names_cap;
	/* ... and the order they are added in: each task's waiter first */
	long *order, *waiter; /* waiter: within order's block */
	size_t order_cap;
	/* The code objects being checked, and their headers as read */
	struct pyd_code **codes;
	size_t ncodes, codes_cap;
	uint8_t *code_hdrs;
	size_t code_hdrs_cap;
	/* greenlet mode: the greenlets known (looked for again once a
	 * second, read again every round) and their boundary labels */
	struct pyd_greenlet_set gs;
	int64_t greenlets_found; /* CLOCK_MONOTONIC ns of the last search */
	char (*glabels)[GLABEL_MAX];
	size_t glabels_cap;
};

static inline int64_t pyd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* batch.c: one read of the fields the round decides on and of every
 * predicted node of the threads marked in_batch (and, now and then, the
 * list heads and the code objects' headers); then thread t's stack into
 * t->fb from it. */
enum pyd_err pyd_batch_read(struct pyd_sampler *sp);
enum pyd_err pyd_batch_walk(struct pyd_sampler *sp,
                            struct pyd_sampled_thread *t);
/* Take the code objects used since the last check, and lay out the reads
 * that check them in iov from sp->niov on; then drop those whose bytes,
 * of which the first nread reads were made, changed. */
bool pyd_batch_plan_code_check(struct pyd_sampler *sp);
void pyd_batch_finish_code_check(struct pyd_sampler *sp, size_t nread);
bool pyd_frames_push(struct pyd_frame_buf *b, struct pyd_frame f);
/* Append n frames (innermost first), then the boundary frame outside
 * them that names their task or greenlet. */
bool pyd_frames_push_unit(struct pyd_frame_buf *b, const struct pyd_frame *v,
                          size_t n, const char *boundary);

/* The modes' own functions (their rows, modes.c, point to them). */
enum pyd_err pyd_round_threads(struct pyd_sampler *sp, unsigned *nstacks);
enum pyd_err pyd_open_gil(struct pyd_sampler *sp);
enum pyd_err pyd_open_exception(struct pyd_sampler *sp);
enum pyd_err pyd_open_tasks(struct pyd_sampler *sp);
enum pyd_err pyd_round_tasks(struct pyd_sampler *sp, unsigned *nstacks);
enum pyd_err pyd_open_greenlets(struct pyd_sampler *sp);
enum pyd_err pyd_round_greenlets(struct pyd_sampler *sp, unsigned *nstacks);
enum pyd_err pyd_record_greenlet(struct pyd_sampler *sp,
                                 struct pyd_sampled_thread *t);

#endif
