/*
 * Reports of a dump.  The same code prints in the CLI and in both debugger
 * plugins, so their outputs match line for line.
 */
#ifndef PYD_REPORT_H
#define PYD_REPORT_H

#include "../pyd.h"
#include "../buf.h"

/* A string literal into b. */
#define PUT(b, lit) pyd_buf_put((b), (lit), sizeof(lit) - 1)

/* What systemd-coredump's records say of a crash whose core is read
 * (--coredump); each field NULL or 0 where they do not say. */
struct pyd_crash {
	const char *exe;      /* the crashed executable */
	int signal;           /* the signal that ended it */
	const char *time;     /* when, as the records give it */
	const char *found_by; /* "coredumpctl", or the directory read */
};

/* "SIGSEGV" for a signal that dumps core, else NULL. */
const char *pyd_core_signal_name(int sig);

struct pyd_report_opts {
	int pid;                    /* the target's pid, <= 0 if unknown */
	const char *origin;         /* "Process 1234", "Core file core.1234" */
	const char *source_kind;    /* "process", "core" or "snapshot" */
	const char *python_version; /* "3.12.1" */
	const char *binary;         /* file holding the interpreter */
	bool free_threaded;         /* a free-threading build (3.13t+) */
	/* Optional: the text of a source line (no trailing newline), or
	 * NULL.  Core reads no files; the frontend knows where they are. */
	const char *(*source_line)(void *ctx, const char *file, int line);
	void *source_ctx;
	/* Threads with native frames (pyd_dump_native): keep the
	 * interpreter's own frames too (--native-all). */
	bool native_all;
	/* One process of several (--subprocesses): its parent and command
	 * line, which the JSON gives; cmdline NULL otherwise. */
	int ppid;
	const char *cmdline;
	/* What was found corrupt in the target's memory
	 * (pyd_session_corruption), which the JSON gives; NULL if nothing. */
	const char *corrupt;
	/* The crash's records (--coredump), which the JSON gives; NULL
	 * otherwise. */
	const struct pyd_crash *crash;
};

/* "ORIGIN: Python 3.15.0 (BINARY)\n", naming a free-threading build. */
void pyd_report_text_head(struct pyd_buf *b, const struct pyd_report_opts *o);

/* ', "corrupt": "WHY"' where o->corrupt says the memory was. */
void pyd_report_json_corrupt(struct pyd_buf *b, const struct pyd_report_opts *o);

/* "running", "idle" or "unknown" */
const char *pyd_run_state_name(enum pyd_thread_run r);

/* Python-traceback style: most recent call last. */
void pyd_report_text(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o);

/* One frame as a stack shows it: "  File ..., line N, in F" and its
 * source line. */
void pyd_report_frame_line(struct pyd_buf *b, const struct pyd_frame *f,
			   const struct pyd_report_opts *o);

/* Frame j of thread t on its own, numbered from the innermost (#0), with
 * its source line (py-frame, py-up, py-down). */
void pyd_report_frame(struct pyd_buf *b, const struct pyd_thread *t,
		      size_t j, const struct pyd_report_opts *o);
/* A frame's arguments and locals as the text dump shows them (py-locals). */
void pyd_report_vars(struct pyd_buf *b, const struct pyd_frame_vars *fv);
/* Which of the native frames nf (innermost first) is the evaluation loop
 * running Python frame j of t, paired as pyd_merge_stacks pairs them; -1
 * if nf has none for it. */
long pyd_native_of(const struct pyd_thread *t, size_t j,
		   const struct pyd_native_frame *nf, size_t n);

/* One frame of a merged stack: t->frames[index], or nf[index]. */
struct pyd_merged {
	bool native;
	size_t index;
	/* A Python frame whose evaluation-loop frame nf lacks (the
	 * outermost ones, when a backtrace stops short). */
	bool orphan;
};

/*
 * Thread t's Python frames and native frames nf (both innermost first)
 * as one stack, innermost first, into out (room for t->nframes + n):
 * each run of Python frames where the evaluation-loop frame running it
 * is.  keep_interp keeps that loop frame (after its run) and the other
 * frames of the interpreter's own binary; else they are left out.
 * Returns the number of entries.
 */
size_t pyd_merge_stacks(const struct pyd_thread *t,
			const struct pyd_native_frame *nf, size_t n,
			bool keep_interp, struct pyd_merged *out);

/* The members every JSON document of a process starts with: {"pid",
 * ("ppid", "cmdline",) "source", "python_version", "binary" (left open). */
void pyd_report_json_head(struct pyd_buf *b, const struct pyd_report_opts *o);

/* A frame's JSON object {"function", "qualname", "file", "line"} (kind:
 * with "kind": "python" first, in a stack merged with native frames). */
void pyd_report_json_frame(struct pyd_buf *b, const struct pyd_frame *f,
			   bool kind);
/* Add to the frame object just written "arguments": {name: repr} and
 * "locals": {name: repr} (each null if the frame's variables could not
 * be read). */
void pyd_report_json_vars(struct pyd_buf *b, const struct pyd_frame_vars *fv);

/* {"pid", "python_version", "threads": [...]} with frames innermost first. */
void pyd_report_json(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o);

/*
 * asyncio task graphs (pyd_dump_tasks).  The tree follows
 * `python -m asyncio pstree`: each root task, its coroutine stack
 * outermost first, and under its innermost frame the tasks it awaits;
 * the table follows `python -m asyncio ps`, one row per awaiter; the JSON
 * is docs/tasks-json.md.
 */
void pyd_report_tasks_tree(struct pyd_buf *b, const struct pyd_task_graph *g,
			   const struct pyd_report_opts *o);
void pyd_report_tasks_table(struct pyd_buf *b, const struct pyd_task_graph *g,
			    const struct pyd_report_opts *o);
void pyd_report_tasks_json(struct pyd_buf *b, const struct pyd_task_graph *g,
			   const struct pyd_report_opts *o);
/* Greenlets (pyd_dump_greenlets): a "Greenlets" section for the text
 * dump, each with its stack like a thread's; the JSON is
 * docs/greenlets-json.md. */
void pyd_report_greenlets_text(struct pyd_buf *b,
			       const struct pyd_greenlet_set *g,
			       const struct pyd_report_opts *o);
void pyd_report_greenlets_json(struct pyd_buf *b,
			       const struct pyd_greenlet_set *g,
			       const struct pyd_report_opts *o);
/* "running", "suspended", "unstarted" or "dead" */
const char *pyd_greenlet_state_name(enum pyd_greenlet_state st);

/* "pending", "done", "cancelled" or "unknown" */
const char *pyd_task_state_name(enum pyd_task_state st);

/*
 * Sampling profiles (pyd_profile.h).  Every report lists p->threads, each
 * a call tree; pass pyd_profile_merged(p) for one tree of all threads.
 * The reports document their formats in docs/profile-formats.md.
 */
struct pyd_profile;
struct pyd_prof_frame;
struct pyd_prof_thread;
struct pyd_prof_opts;

/* A task boundary as shown: "<task NAME>" (or a greenlet's, "<greenlet
 * NAME>", as it is), into buf. */
const char *pyd_task_label(const char *name, char *buf, size_t bufsz);
/* How a frame is shown: "qualname (file:line)", "qualname (file)" when
 * lines are off, "<task NAME>" for a task boundary.  Into buf. */
const char *pyd_prof_frame_label(const struct pyd_prof_frame *f, char *buf,
				 size_t bufsz);

/* "process 1234 (python3 app.py)": how reports name a process of a
 * profile that keeps them apart; into buf. */
const char *pyd_prof_process_label(const struct pyd_profile *p, uint32_t proc,
                                   char *buf, size_t bufsz);
/* The thread whose node is node; NULL if node is no thread's. */
const struct pyd_prof_thread *pyd_prof_thread_of(const struct pyd_profile *p,
                                                 uint32_t node);

/*
 * Depth first over the subtree below node top (top excluded), parents
 * before children:
 *
 *	struct pyd_prof_walk w;
 *	uint32_t n;
 *	for (pyd_prof_walk_start(&w, p, top); pyd_prof_walk_next(&w, &n);)
 *		... w.depth is n's depth: 1 for a child of top ...
 *
 * A node at depth d comes after every node deeper than d on the path
 * before it has been left, so a writer keeping the path from top trims it
 * to d - 1 entries and pushes n.
 */
struct pyd_prof_walk {
	const struct pyd_profile *p;
	uint32_t top, next;
	size_t depth, next_depth;
};
void pyd_prof_walk_start(struct pyd_prof_walk *w, const struct pyd_profile *p,
                         uint32_t top);
bool pyd_prof_walk_next(struct pyd_prof_walk *w, uint32_t *node);

/*
 * An HTML page of a profile: the template page (embedded at build time,
 * tools/embed.py) with its "@PYD_DATA@" marker, inside a script element,
 * replaced by the JSON in data (every '<' escaped); "null" if data
 * failed, and b fails too.
 */
void pyd_prof_page(struct pyd_buf *b, const char *page,
                   const struct pyd_buf *data);

/* A function's samples: frames that differ only in their line are one
 * function, named by the frame of index frame. */
struct pyd_prof_func {
	uint32_t frame;
	uint64_t self;       /* samples with the function innermost */
	uint64_t self_await; /* of those, of tasks in await */
	uint64_t cum; /* samples with it anywhere on the stack, once each */
};

/*
 * Every function of a finished profile, unsorted, into *rows (free it);
 * their number, or SIZE_MAX if out of memory.  self: per node, the
 * samples to count instead of the nodes' own (a time window's, threads
 * left out as 0s), self_await then staying 0; NULL: the nodes'.
 */
size_t pyd_prof_functions(const struct pyd_profile *p, const uint64_t *self,
                          struct pyd_prof_func **rows);

/*
 * The writers of the formats (formats.c lists them): each writes the
 * whole profile into b.  limit: most rows a format with rows shows
 * (0: all); the others show everything.
 */

/* Per function, like pstats: direct and cumulative samples, percentages,
 * estimated times; the most expensive limit rows (0: all). */
void pyd_report_prof_table(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* "frame;frame;frame count" lines, outermost first (flamegraph.pl). */
void pyd_report_prof_collapsed(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The trees as flat JSON (docs/profile-formats.md). */
void pyd_report_prof_json(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* Source files with their samples per line: one HTML page, their text
 * from o->source_line. */
void pyd_report_prof_heatmap(struct pyd_buf *b, const struct pyd_profile *p,
			const struct pyd_prof_opts *o);
/* One self-contained interactive HTML page. */
void pyd_report_prof_flamegraph(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The flame graph of p as a differential one: base_total holds, per node
 * of p, the samples of the same path in the profile compared against,
 * which had base_samples in all; frames are coloured by the change of
 * their share. */
void pyd_report_flamegraph_diff(struct pyd_buf *b, const struct pyd_profile *p,
                                const uint64_t *base_total,
                                uint64_t base_samples);
/* speedscope's file format (one sampled profile per thread). */
void pyd_report_prof_speedscope(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The Firefox Profiler's Gecko profile format. */
void pyd_report_prof_gecko(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* pprof's profile.proto, gzipped: binary, b->len bytes. */
void pyd_report_prof_pprof(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The marshal'd stats pstats.Stats loads: binary, b->len bytes. */
void pyd_report_prof_pstats(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The streamed formats (pyd_stream.h): recordings (docs/recording-format.md)
 * and a JSON line per sample. */
extern const struct pyd_stream_writer pyd_stream_raw, pyd_stream_jsonl;

#endif
