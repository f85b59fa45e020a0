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

#endif
