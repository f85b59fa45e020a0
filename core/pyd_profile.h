/*
 * Sampling profiles: samples aggregated into call trees as they come, so
 * memory grows with the number of distinct stacks, never with the number
 * of samples.
 *
 * Node 0 is the root.  Its children are one node per thread (or per
 * thread running asyncio tasks, in async mode); under each, the frames
 * outermost first.  Every thread belongs to a process: one for the
 * process sampled, more with sample --subprocesses (by_process).  Frames are interned by content: two code objects
 * with the same names, file, first line and line are one frame.  The reports in
 * core/report/profile*.c read these structs directly.
 */
#ifndef PYD_PROFILE_H
#define PYD_PROFILE_H

#include "pyd.h"
#include "buf.h"

#define PYD_PROF_NONE UINT32_MAX

enum pyd_sample_mode {
	PYD_SAMPLE_WALL,  /* every thread every tick */
	PYD_SAMPLE_CPU,   /* threads on a CPU at the tick */
	PYD_SAMPLE_GIL,   /* the thread holding the GIL */
	PYD_SAMPLE_ASYNC, /* every asyncio task, running or awaiting */
	PYD_SAMPLE_EXCEPTION, /* threads raising or handling an exception */
	PYD_SAMPLE_GREENLET,  /* every greenlet, running or switched out */
	PYD_SAMPLE_MODES      /* how many there are */
};

/* Modes whose samples include stacks waiting rather than running
 * (asyncio tasks awaiting, greenlets switched out): the profile counts
 * those apart (self_await, await_samples). */
static inline bool pyd_sample_mode_awaits(enum pyd_sample_mode m)
{
	return m == PYD_SAMPLE_ASYNC || m == PYD_SAMPLE_GREENLET;
}

/* "wall", "cpu", "gil", "async", "exception", "greenlet" */
const char *pyd_sample_mode_name(enum pyd_sample_mode m);
/* The mode of that name; false if there is none. */
bool pyd_sample_mode_named(const char *name, enum pyd_sample_mode *m);

enum pyd_prof_frame_kind {
	PYD_PF_PYTHON, /* a Python function */
	PYD_PF_TASK,   /* an asyncio task boundary: function is its name */
	PYD_PF_ELIDED, /* the outer frames a deep stack left out: function
	                * is "<truncated N frames>" */
	PYD_PF_GC,     /* the garbage collector the thread runs: "<GC>" */
};

/* The kinds' names in the json format ("python", "task", "truncated",
 * "gc"): one list for its writer and its reader. */
extern const char *const pyd_prof_kind_names[PYD_PF_GC + 1];

struct pyd_prof_frame {
	const char *function;
	const char *qualname; /* NULL where CPython has none (< 3.11) */
	const char *file;     /* NULL for PYD_PF_TASK, _ELIDED and _GC */
	int line;             /* -1 if unknown, 0 when lines are off */
	int firstline;        /* the function's first line (pstats); 0 if
	                       * unknown */
	enum pyd_prof_frame_kind kind;
};

struct pyd_prof_node {
	uint32_t frame;  /* index into frames; PYD_PROF_NONE for the root
	                  * and the thread nodes */
	uint32_t parent; /* PYD_PROF_NONE for the root */
	uint32_t first_child, next_sibling; /* PYD_PROF_NONE: none */
	uint64_t self;       /* samples whose innermost frame is this one */
	uint64_t self_await; /* of those, samples of a task in await */
	uint64_t total;      /* self + children's totals (pyd_profile_finish) */
};

/* Threads of one process a profile keeps apart; the samples of any more
 * are counted as one thread, tid PYD_PROF_OTHER_TID, "<other threads>". */
#define PYD_PROF_MAX_THREADS 1024
#define PYD_PROF_OTHER_TID (-1)

struct pyd_prof_thread {
	int64_t tid; /* OS thread id, 0 if unknown, PYD_PROF_OTHER_TID */
	char name[64];
	uint32_t node;    /* its node, a child of the root */
	uint32_t process; /* index into processes */
	uint32_t folded;  /* threads merged into this one (1: a thread) */
	/* The sampler looked whether it ran on a CPU (watched) and saw it
	 * do so (ran): watched && !ran is an idle thread. */
	bool watched, ran;
};

struct pyd_prof_process {
	int pid, ppid;
	char cmdline[256];       /* arguments joined by blanks, or "" */
	char python_version[16]; /* "3.12.1" */
	bool exited; /* it exited (or ran exec) while being sampled */
	/* Its idle threads a copy left out (pyd_profile_active) and their
	 * samples, for the table to say what it does not show. */
	size_t idle_threads;
	uint64_t idle_samples;
};

/* What the frontend tells the reports about the run. */
struct pyd_prof_meta {
	int pid;
	const char *python_version;
	enum pyd_sample_mode mode;
	double rate_hz;    /* asked for; 0 for "as fast as possible" */
	double duration_s; /* wall time spent sampling */
	double interval_s; /* estimated time one sample stands for */
	uint64_t start_unix_us;
	uint64_t ticks;   /* sampling rounds */
	uint64_t samples; /* stacks recorded (a round can record several) */
	uint64_t errors;  /* rounds that failed (torn or unreadable) */
	uint64_t missed;  /* ticks that came and went while we were busy */
	uint64_t reads;   /* memory-source calls */
	uint64_t cpu_samples, await_samples; /* async mode */
	/* gil mode: looks at who waits for the GIL (every 100 ms), those
	 * that found threads waiting, and the waiters counted in all and at
	 * most; 0 looks where the source cannot tell (a recording, a core) */
	uint64_t gil_looks, gil_contended, gil_waiters, gil_waiters_max;
	/* When the round being taken began, in µs after sampling began
	 * (pyd_sample_loop sets it; a replayed recording, its samples'
	 * times): the time of the samples pyd_profile_add is given. */
	uint64_t round_us;
	/* What a sampler found corrupt in its target's memory (the first
	 * pyd_session_corruption), for the summary; "" if nothing. */
	char corrupt[192];
};

/* One sample as pyd_profile_add counted it, for the profile's hook. */
struct pyd_prof_sample {
	uint32_t thread;        /* index into threads */
	const uint32_t *frames; /* indexes into frames, outermost first */
	size_t n;
	size_t kept; /* how many outermost frames are the thread's previous
	              * sample's */
	bool awaiting;
};

struct pyd_profile {
	/* Read-only for reports. */
	struct pyd_prof_frame *frames;
	size_t nframes;
	struct pyd_prof_node *nodes;
	size_t nnodes;
	struct pyd_prof_thread *threads;
	size_t nthreads;
	struct pyd_prof_process *processes;
	size_t nprocesses;
	bool by_process; /* reports keep processes apart (--subprocesses) */
	bool lines;     /* frames keep their line numbers */
	bool truncated; /* the node limit was hit: deeper frames were folded */
	bool merged;    /* one tree for all threads (pyd_profile_merged) */
	/* Samplers mark the garbage collector's runs with a <GC> frame
	 * (true from pyd_profile_new; set before the first sample). */
	bool gc;
	size_t threads_merged; /* how many threads that tree holds */
	struct pyd_prof_meta meta;
	/* Told of every sample once it is counted (optional): the streamed
	 * formats (pyd_stream.h) write samples as they come. */
	void (*on_sample)(void *ctx, const struct pyd_profile *p,
	                  const struct pyd_prof_sample *s);
	void *on_sample_ctx;
	struct pyd_profile_priv *priv;
};

/* Keep line numbers (lines) or aggregate by function; at most max_nodes
 * tree nodes (0: a default of about a million, some 50 MB at most). */
struct pyd_profile *pyd_profile_new(bool lines, size_t max_nodes);
void pyd_profile_free(struct pyd_profile *p);

/* Register a process whose threads pyd_profile_add will count; its index
 * (PYD_PROF_NONE if out of memory).  cmdline and version may be NULL. */
uint32_t pyd_profile_process(struct pyd_profile *p, int pid, int ppid,
                             const char *cmdline, const char *version);

/*
 * Count one sample: frames (innermost first) seen on thread tid of the
 * process of that index.  A frame
 * with file == NULL is an asyncio task boundary named by its function.
 * awaiting: the sample is of a task suspended in await (async mode).
 * Strings are copied when first seen.  The profile remembers the
 * addresses of frame strings (not of task names) to skip copying them
 * again, so those must stay unchanged at their address until
 * pyd_profile_forget_strings is called: a sampler calls it when the
 * session's code cache frees entries (pyd_code_recheck).
 */
enum pyd_err pyd_profile_add(struct pyd_profile *p, uint32_t process,
                             int64_t tid, const char *thread_name,
                             const struct pyd_frame *frames, size_t n,
                             bool awaiting);

/* The same for a sampler that knows the outermost `same` frames to be
 * those of the thread's previous sample, strings at the same addresses:
 * they are not looked at again. */
enum pyd_err pyd_profile_add_same(struct pyd_profile *p, uint32_t process,
                                  int64_t tid, const char *thread_name,
                                  const struct pyd_frame *frames, size_t n,
                                  size_t same);

/* The same for one of many units sampled on a thread each round (async
 * mode's tasks, greenlet mode's greenlets): the path is reused from the
 * previous sample of the same unit (any index: a unit whose index now
 * names another is only slower once), not of the thread. */
enum pyd_err pyd_profile_add_unit(struct pyd_profile *p, uint32_t process,
                                  int64_t tid, const char *thread_name,
                                  const struct pyd_frame *frames, size_t n,
                                  bool awaiting, size_t unit);

/* Forget the frame strings' addresses remembered so far: the strings
 * there may be freed, and others take their place. */
void pyd_profile_forget_strings(struct pyd_profile *p);

/* A copy of s that lives as long as the profile, one for equal strings;
 * NULL if out of memory. */
const char *pyd_profile_intern(struct pyd_profile *p, const char *s);

/*
 * For readers of saved profiles, which know their trees already: the node
 * of thread tid of process (added if new), and the child of node parent
 * for frame f (its strings copied; added if new, or parent itself once the
 * tree is full).  PYD_PROF_NONE if out of memory.  The caller adds the
 * counts to the nodes' self and self_await.
 */
uint32_t pyd_profile_thread_node(struct pyd_profile *p, uint32_t process,
                                 int64_t tid, const char *name);
uint32_t pyd_profile_child(struct pyd_profile *p, uint32_t parent,
                           const struct pyd_prof_frame *f);
/* Tell that thread tid of process was seen on a CPU or not (running);
 * a thread with no sample yet is left as it is. */
void pyd_profile_thread_run(struct pyd_profile *p, uint32_t process,
                            int64_t tid, bool running);
/* Is thread t idle: watched, and never seen on a CPU? */
static inline bool pyd_prof_thread_idle(const struct pyd_prof_thread *t)
{
	return t->watched && !t->ran;
}

/* Fill in the totals; call once sampling is over, before any report. */
void pyd_profile_finish(struct pyd_profile *p);

/*
 * Everything counted so far, as a profile of its own, while p starts
 * afresh for the samplers that feed it (sample --every): p keeps its
 * processes, its hook and its meta's description (pid, version, mode,
 * rate), its counts back at 0.  NULL (p unchanged) if out of memory.
 */
struct pyd_profile *pyd_profile_split(struct pyd_profile *p);

/* A finished copy with every thread's tree of a process merged into one
 * thread (tid 0, "all threads"), one per process; NULL if out of memory. */
struct pyd_profile *pyd_profile_merged(const struct pyd_profile *p);
/* A finished copy without the idle threads (pyd_prof_thread_idle); NULL
 * if out of memory. */
struct pyd_profile *pyd_profile_active(const struct pyd_profile *p);
/* A finished copy of only the threads of process proc (its processes
 * stay all listed); NULL if out of memory. */
struct pyd_profile *pyd_profile_of_process(const struct pyd_profile *p,
                                           uint32_t proc);

struct pyd_stream_writer;

/* How pyd_report_prof writes a profile. */
struct pyd_prof_opts {
	bool per_thread; /* a tree per thread; else one merged tree */
	size_t limit;    /* rows of a format with rows; 0 for all */
	/* Optional: the text of a source line (no newline), or NULL.  Core
	 * reads no files; the frontend knows where they are. */
	const char *(*source_line)(void *ctx, const char *file, int line);
	void *source_ctx;
};

/*
 * The formats a profile is written in: one table (core/report/formats.c)
 * that -f, the -o file name, every --help and the tests read.
 */
struct pyd_prof_format {
	const char *name;        /* -f NAME */
	const char *suffixes[3]; /* file names ending so pick it (-o) */
	const char *summary;     /* for --help: lines of up to 34 columns */
	/* Always every thread's tree, even when asked to merge them: the
	 * format's viewers pick threads themselves. */
	bool per_thread;
	void (*write)(struct pyd_buf *b, const struct pyd_profile *p,
	              size_t limit);
	/* Instead of write, for a format that needs more than the limit
	 * (the heat map's source lines). */
	void (*write_opts)(struct pyd_buf *b, const struct pyd_profile *p,
	                   const struct pyd_prof_opts *o);
	/* A streamed format instead (write and write_opts NULL): written
	 * sample by sample as they are taken (pyd_stream.h). */
	const struct pyd_stream_writer *stream;
};

/* Every format, in the order the help lists them; ends with a NULL name. */
extern const struct pyd_prof_format pyd_prof_formats[];

/* The format called name; NULL if none is. */
const struct pyd_prof_format *pyd_prof_format_named(const char *name);
/* The format a file name asks for by its longest matching suffix
 * (x.speedscope.json is speedscope, not json); collapsed if none. */
const struct pyd_prof_format *pyd_prof_format_for_file(const char *path);
/* "table, collapsed, ..., json" into out: every name, for messages. */
void pyd_prof_format_list(char *out, size_t size);

/*
 * Write a finished profile as format f: one merged tree unless
 * o->per_thread (or f->per_thread).  PYD_E_USAGE for a streamed format,
 * which no finished profile holds.
 */
enum pyd_err pyd_report_prof(struct pyd_buf *b, const struct pyd_profile *p,
			     const struct pyd_prof_format *f,
			     const struct pyd_prof_opts *o);

/*
 * Reading a saved profile back (core/report/read.c): pystack-dump's JSON
 * tree, collapsed stacks or a recording (sample -f raw), told apart by
 * their content.  data is the
 * whole file (copied).  A finished profile into *out (pyd_profile_free
 * it), or PYD_E_PROFILE with why in detail.
 */
enum pyd_err pyd_profile_read(const char *data, size_t len,
                              struct pyd_profile **out, char *detail,
                              size_t detailsz);

/*
 * Comparing two finished profiles (core/report/diff.c): now (the newer)
 * against base, by each frame's share of its profile's samples.  The formats: "table"
 * (functions that grew and shrank most, limit rows each; 0: all),
 * "collapsed" (each stack's samples in both and the change of its
 * share), "flamegraph" (now's graph coloured by the change).
 */
extern const char *const pyd_diff_formats[];
/* PYD_E_USAGE if format is none of them. */
enum pyd_err pyd_report_diff(struct pyd_buf *b, const struct pyd_profile *base,
                             const struct pyd_profile *now,
                             const char *format, size_t limit);

/*
 * The sampler: takes samples of a live target (without stopping it) into
 * a profile.  Each round asks for one batched read of every node seen in
 * the previous round (thread states and their frames) and only reads
 * on its own where the stack changed, so a steady stack costs one read.
 */
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
