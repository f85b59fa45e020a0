/*
 * The profile model: samples aggregated into call trees as they come, so
 * memory grows with the number of distinct stacks, never with the number
 * of samples.
 *
 * Node 0 is the root.  Its children are one node per thread (or per
 * thread running asyncio tasks, in async mode); under each, the frames
 * outermost first.  Every thread belongs to a process: one for the
 * process sampled, more with sample --subprocesses (by_process).  Frames
 * are interned by content: two code objects with the same names, file,
 * first line and line are one frame.
 *
 * Samplers (sampler.h) and readers of saved profiles (report/read.c)
 * build one; the writers (report/profiles.h) read it finished, through
 * the structs below and pyd_profile_view, and never build.
 */
#ifndef PYD_PROFILE_PROFILE_H
#define PYD_PROFILE_PROFILE_H

#include "../pyd.h"
#include "../buf.h"

#define PYD_PROF_NONE UINT32_MAX

/* The mode a profile was sampled in: the index of its row in the table
 * of modes (modes.h).  Recordings store it: a new mode goes last. */
enum pyd_sample_mode {
	PYD_SAMPLE_WALL,
	PYD_SAMPLE_CPU,
	PYD_SAMPLE_GIL,
	PYD_SAMPLE_ASYNC,
	PYD_SAMPLE_EXCEPTION,
	PYD_SAMPLE_GREENLET,
	PYD_SAMPLE_MODES /* how many there are */
};

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
	/* Its idle threads a view left out (pyd_profile_view) and their
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
	bool merged;    /* one tree for all threads (a merged view) */
	/* Samplers mark the garbage collector's runs with a <GC> frame
	 * (true from pyd_profile_new; set before the first sample). */
	bool gc;
	size_t threads_merged; /* how many threads that tree holds */
	struct pyd_prof_meta meta;
	/* Told of every sample once it is counted (optional): the streamed
	 * formats (report/stream.h) write samples as they come. */
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

/* A finished copy of p for a writer, made once: only the threads of
 * process proc (PYD_PROF_NONE: every process; its processes stay all
 * listed), without the idle ones (pyd_prof_thread_idle) if active, and
 * each process's threads merged into one (tid 0, "all threads") if
 * merge; a view of one process is described as that process (meta's
 * pid and version).  NULL if out of memory. */
struct pyd_profile *pyd_profile_view(const struct pyd_profile *p,
                                     uint32_t proc, bool active, bool merge);

#endif
