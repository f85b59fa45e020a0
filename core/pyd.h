/*
 * pystack-dump core: decode CPython interpreter state from a memory source.
 *
 * Usage: find the runtime (pyd_runtime_find_elf or _symbols), open a
 * session on the source, then take as many dumps (or, later, samples) as
 * you like.  A session caches immutable objects (code objects, their names
 * and line tables) by address, so repeated reads of the same process get
 * cheaper.  Core does no I/O of its own: every byte comes through the
 * memory source, every report goes into a caller-owned buffer.
 */
#ifndef PYD_H
#define PYD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memsrc/memsrc.h"
#include "pyd_error.h"
#include "runtime/runtime.h"

struct pyd_frame {
	const char *function; /* co_name */
	const char *qualname; /* co_qualname (3.11+), else NULL */
	const char *file;     /* co_filename */
	int line;             /* current line, -1 if it has none */
	/* The outermost frame of one run of the evaluation loop: C code
	 * called into the interpreter here (py-bt -n pairs each such run
	 * with its _PyEval_EvalFrameDefault native frame). */
	bool entry;
	/* Of an entry frame (3.12+): where the run's C-stack shim is, inside
	 * the stack frame of its evaluation-loop activation; 0 if unknown. */
	uint64_t entry_at;
	/* Its code is a generator's, a coroutine's or an async
	 * generator's. */
	bool generator;
	/* Stands for the outer frames a sampled stack deeper than
	 * PYD_MAX_FRAMES left out: function is "<truncated N frames>". */
	bool elided;
	/* The frame object (<= 3.10) or interpreter frame (3.11+) and its
	 * code object, in the target; 0 where a frame has none (a task's
	 * name standing in for a frame). */
	uint64_t addr, code;
	int firstline; /* co_firstlineno: where the function starts */
	/* Stands for the garbage collector the thread runs (the sampler's
	 * marker): function is "<GC>". */
	bool gc;
};

/* One variable of a frame, as pyd_dump_locals renders it. */
struct pyd_var {
	const char *name; /* the code object's; owned by the session */
	char *repr;       /* owned by the dump */
	bool argument;
};

/* The variables of one frame: arguments first, then the other locals
 * (cell and free variables included), in code-object order; variables
 * not bound yet are left out. */
struct pyd_frame_vars {
	struct pyd_var *v;
	size_t n;
	bool unreadable; /* the frame's variables could not be read at all */
};

/* A native frame: unwound by pyd_dump_native, or a debugger's. */
struct pyd_native_frame {
	uint64_t pc;
	const char *function; /* NULL if unknown */
	const char *library;  /* its file's name; NULL if unknown */
	const char *file;     /* source file, NULL if unknown */
	int line;             /* its line, 0 if unknown */
	bool interp;          /* in the interpreter's own binary */
	uint64_t sp;          /* its stack pointer, 0 if unknown */
};

/* Is f a frame of the evaluation loop named loop (a ".cold" part
 * too)? */
static inline bool pyd_native_is_loop(const struct pyd_native_frame *f,
                                      const char *loop)
{
	size_t n = strlen(loop);
	return f->function && !strncmp(f->function, loop, n) &&
	       (!f->function[n] || f->function[n] == '.');
}

/* The evaluation loop's name among nf: _PyEval_EvalFrameDefault from 3.6
 * on, PyEval_EvalFrameEx as a last resort. */
static inline const char *pyd_native_loop_name(const struct pyd_native_frame *nf,
                                               size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (pyd_native_is_loop(&nf[i], "_PyEval_EvalFrameDefault"))
			return "_PyEval_EvalFrameDefault";
	return "PyEval_EvalFrameEx";
}

struct pyd_thread {
	int64_t tid;       /* OS thread id, 0 if unknown */
	uint64_t tstate;   /* its PyThreadState's address */
	int64_t interp_id; /* interpreter the thread belongs to */
	uint64_t ident;    /* threading.get_ident(): the pthread_t */
	/* threading.Thread.name, read from threading._active; else (a
	 * thread threading does not know) the OS thread name; "" if
	 * unknown.  Long names are cut (at a character boundary). */
	char name[64];
	bool holds_gil;
	/* Blocked on the GIL's lock or condition variable: waiting to run
	 * Python (live processes, 3.7+ with a GIL) */
	bool waits_gil;
	/* Raising or handling an exception (an except or finally under
	 * way), as CPython 3.15's own tools tell it (pyd_in_exception) */
	bool in_exception;
	enum pyd_thread_run run;
	struct pyd_frame *frames; /* innermost first */
	size_t nframes;
	/* nframes entries once pyd_dump_locals ran, else NULL. */
	struct pyd_frame_vars *vars;
	/* Its native stack, innermost first, once pyd_dump_native ran
	 * (strings owned by the dump). */
	struct pyd_native_frame *native;
	size_t nnative;
	enum pyd_err native_error; /* PYD_OK, or why native is short */
	/* PYD_OK, or why the stack is incomplete (frames holds what we got). */
	enum pyd_err error;
	bool truncated; /* deeper than PYD_MAX_FRAMES */
	/* Its outer frames were read back from its data stack: the C-stack
	 * frames linking them are not in the core (3.12+). */
	bool recovered;
	/* Its OS thread holds thread states of other interpreters too (it
	 * entered them: interp.call); its native frames are the OS
	 * thread's, of which a merge keeps those of this state's runs. */
	bool shared;
};

struct pyd_dump {
	struct pyd_thread *threads;
	size_t nthreads;
	size_t ninterps;
	unsigned retries; /* torn reads we retried */
	bool has_locals; /* pyd_dump_locals ran */
	bool has_native; /* pyd_dump_native ran */
	/* pyd_dump_locals stopped reading at its budget: the values left
	 * show as <not read: budget spent>. */
	bool locals_budget_spent;
};

/* How much of a value a repr shows. */
struct pyd_repr_limits {
	unsigned string; /* characters of a str or bytes */
	unsigned items;  /* items of a container, attributes of an object */
	unsigned depth;  /* levels of containers shown inside each other */
	unsigned digits; /* digits of an int shown whole */
	bool attrs;      /* a plain instance's attributes too (py-print) */
};

/* The defaults of --locals: 80 characters, 10 items, 2 levels, 60
 * digits; py-print's deeper look. */
#define PYD_REPR_DEFAULTS ((struct pyd_repr_limits){80, 10, 2, 60, false})
#define PYD_REPR_DEEP ((struct pyd_repr_limits){1000, 100, 5, 1000, true})

/* A dump's locals read at most this much of the target and render at
 * most this much text: a corrupt heap cannot make it slow or large. */
#define PYD_LOCALS_MAX_READS 1000000
#define PYD_LOCALS_MAX_BYTES (256u << 20)
#define PYD_LOCALS_MAX_TEXT (64u << 20)

/* Deepest stack we walk (its innermost frames; the thread is then marked
 * truncated): a recursion limit raised that far costs 50 MB here. */
#define PYD_MAX_FRAMES 1000000

/*
 * What one dump (a sampler: one round) may read of its target, and how
 * many threads and frames it keeps, whatever the target's memory holds:
 * lists that look endless in corrupt or hostile memory cost at most
 * this.  Real targets take a fraction of it: a 1,000,000-frame stack
 * 0.03 M reads (3.12) to 0.1 M (3.10), 10,000 asyncio tasks 0.14 M
 * (3.15) to 0.3 M (3.8).
 */
#define PYD_DUMP_MAX_READS 8000000
#define PYD_DUMP_MAX_BYTES (2ull << 30)
#define PYD_DUMP_MAX_THREADS 65536
#define PYD_DUMP_MAX_FRAMES 4000000

struct pyd_session;

/*
 * Pick the layout for the target's CPython (reading _Py_DebugOffsets on
 * 3.13+).  On failure *detail says more ("Python 2.7.18", ...).
 */
enum pyd_err pyd_session_open(const struct pyd_memsrc *src,
			      const struct pyd_runtime *rt,
			      struct pyd_session **out, char *detail,
			      size_t detailsz);
void pyd_session_close(struct pyd_session *s);

/* "3.12.1" */
const char *pyd_session_version(const struct pyd_session *s);
/* The file holding the interpreter, as the target names it. */
const char *pyd_session_binary(const struct pyd_session *s);
/* A free-threading build (Py_GIL_DISABLED, 3.13t+): no GIL. */
bool pyd_session_free_threaded(const struct pyd_session *s);
/* Where the layout came from: "debug offsets" or "built-in table". */
const char *pyd_session_layout_source(const struct pyd_session *s);
/* NULL, or what the decoders found corrupt in the target's memory (a
 * list that loops back, a read budget spent): its structures were read
 * up to there, and what was read is still in the dump. */
const char *pyd_session_corruption(const struct pyd_session *s);

/* Every thread of every interpreter with its Python stack. */
enum pyd_err pyd_dump_stacks(struct pyd_session *s, struct pyd_dump *out);
void pyd_dump_free(struct pyd_dump *d);

/*
 * The variables of every frame of a dump (struct pyd_thread.vars) and,
 * if g is not NULL, of its greenlets (struct pyd_greenlet.vars), their
 * values rendered as Python's repr() within lim, reading at most
 * PYD_LOCALS_MAX_READS / _BYTES and rendering PYD_LOCALS_MAX_TEXT for
 * all of them together.  A value that cannot be read shows as
 * <unreadable at 0xADDR>; nothing else of the dump changes.
 */
struct pyd_greenlet_set;
enum pyd_err pyd_dump_locals(struct pyd_session *s, struct pyd_dump *d,
			     struct pyd_greenlet_set *g,
			     const struct pyd_repr_limits *lim);
/* Free the variables of n frames (pyd_dump_locals's). */
void pyd_frame_vars_free(struct pyd_frame_vars *v, size_t n);

/*
 * The native stack of every thread (struct pyd_thread.native), unwound
 * with elfutils' libdwfl from the source's registers (a core's, or a live
 * process's paused threads': pyd_live_pause first) and memory; threads
 * that run no Python are added with their native stack only.
 * interp_lines: find the source lines of the interpreter's own frames
 * too (costly: its debug info is large), for a report that shows them.
 * A thread whose native stack could not be unwound has native_error
 * set (every thread, with the error returned, when none could be).
 */
enum pyd_err pyd_dump_native(struct pyd_session *s, struct pyd_dump *d,
			     bool interp_lines);

/*
 * The native frames a debugger unwound (innermost first; those of one
 * stack frame, a function and the ones inlined into it, at one pc), named
 * as pyd_dump_native names its own stack frames -- function, library,
 * file:line, inlined functions, from the same files and debug info -- so
 * a debugger's py-bt -n prints what pystack-dump --native-all does.  Into
 * t->native (freed with the dump); the frames gdb makes up for tail calls
 * (from DWARF call sites: no unwinder finds them on the stack) are left
 * out, and a recursion whose frames return to one address counts once.
 * A t without a name (a thread the dump had no thread state for) gets
 * the source's name and state.
 */
enum pyd_err pyd_native_name(struct pyd_session *s,
                             const struct pyd_native_frame *f, size_t n,
                             bool interp_lines, struct pyd_thread *t);

/* Most native frames we unwind per thread. */
#define PYD_MAX_NATIVE 4096

/*
 * The repr (malloc'd, within lim) of the variable `name` as frame f sees
 * it: its locals, then its globals, then its builtins; *scope says which
 * ("local", "global" or "builtin"); *repr is NULL if none has it.
 */
enum pyd_err pyd_frame_lookup(struct pyd_session *s, const struct pyd_frame *f,
			      const char *name,
			      const struct pyd_repr_limits *lim, char **repr,
			      const char **scope);

/*
 * asyncio task graphs.
 *
 * Every pending asyncio Task of every interpreter (the C Task type and its
 * subclasses; third-party task types that do not derive from it are not
 * seen), with its coroutine stack and who awaits whom.  The structs are
 * the same for every CPython version; which versions can be decoded is
 * the decoder's business (PYD_E_UNSUPPORTED from pyd_dump_tasks).
 */
enum pyd_task_state {
	PYD_TASK_PENDING,
	PYD_TASK_DONE,
	PYD_TASK_CANCELLED,
	PYD_TASK_UNKNOWN,
};

struct pyd_task {
	uint64_t id;      /* address of the Task object */
	const char *name; /* owned by the graph; never NULL */
	enum pyd_task_state state;
	int64_t thread;   /* OS tid of the thread whose task list holds it,
			   * 0 if unknown (its thread exited, or it was only
			   * found as an awaiter) */
	bool running;     /* the running task of its thread */
	/* Innermost first; the task's own coroutine is LAST.  A running
	 * task's stack is its thread's Python stack down to that coroutine
	 * (so it includes the plain functions it called). */
	struct pyd_frame *coro_stack;
	size_t ncoro;
	uint64_t *awaits;     /* ids of the tasks this task waits on */
	size_t nawaits;
	uint64_t *awaited_by; /* ids of the tasks waiting on this one */
	size_t nawaited_by;
	/* PYD_OK, or why coro_stack is incomplete (it holds what we got). */
	enum pyd_err error;
};

/* One await cycle: ids[0] awaits ids[1] ... awaits ids[n-1] == ids[0]. */
struct pyd_task_cycle {
	uint64_t *ids;
	size_t n;
};

struct pyd_task_graph {
	struct pyd_task *tasks; /* in the order the target lists them */
	size_t ntasks;
	struct pyd_task_cycle *cycles; /* await cycles found */
	size_t ncycles;
	/* PYD_OK, or why the list of tasks may be incomplete (a list kept
	 * changing, or could not be read to its end). */
	enum pyd_err error;
	bool asyncio_loaded; /* false: the target has not imported asyncio
			      * (so it has no tasks) */
	/* Without asyncio, the other event loop it has imported ("trio",
	 * "curio", "gevent", ...), whose tasks are not read; NULL if none */
	const char *other_loop;
	bool truncated;      /* more than PYD_MAX_TASKS: the rest are left out */
	unsigned retries;    /* task lists re-read because they changed */
	struct pyd_task_index *index; /* pyd_task_find's; NULL: none built */
	struct pyd_arena *arena; /* the tasks' names, frames and edges */
};

/* The index in g->tasks of the task with this id, or -1. */
long pyd_task_find(const struct pyd_task_graph *g, uint64_t id);

/* Most tasks we list; a corrupt (or looping) list must end. */
#define PYD_MAX_TASKS 1000000

/*
 * The task graph of the target.  Frames point into the session's caches:
 * free the graph before closing the session.  PYD_E_UNSUPPORTED if this
 * CPython's tasks cannot be decoded (yet); PYD_E_READ if the _asyncio
 * module is loaded but its debug offsets could not be found (a core
 * without the module's file).
 */
enum pyd_err pyd_dump_tasks(struct pyd_session *s, struct pyd_task_graph *g);
/* The same through a source that batches its reads itself (the sampler's
 * prefetcher): no page cache of its own. */
enum pyd_err pyd_dump_tasks_batched(struct pyd_session *s,
				    struct pyd_task_graph *g);
/* Whether this CPython's task graphs can be decoded at all, without
 * decoding one (pyd_dump_tasks says PYD_E_UNSUPPORTED where not). */
bool pyd_tasks_supported(const struct pyd_session *s);
void pyd_task_graph_free(struct pyd_task_graph *g);

/*
 * Greenlets (the greenlet module, and gevent on it): every greenlet
 * object of every interpreter, found in the garbage collector's lists,
 * with the stack it was suspended in.  The module's objects are C++
 * whose layout changes between its releases: the ones we know are a
 * table (greenlets.c), and any other is refused (unknown_layout).
 */
enum pyd_greenlet_state {
	PYD_GREENLET_RUNNING,   /* its stack is its thread's */
	PYD_GREENLET_SUSPENDED,
	PYD_GREENLET_UNSTARTED,
	PYD_GREENLET_DEAD,
};

/* The call a frame is suspended in: what a switched-out greenlet waits
 * on (gevent's Hub.wait(timer), Event.wait(), greenlet.switch()). */
#define PYD_CALL_MAX_ARGS 8
struct pyd_call {
	char *function; /* its __qualname__, NULL if not one we can name */
	char *args[PYD_CALL_MAX_ARGS]; /* as --locals renders values; the
					  receiver (self) first */
	size_t nargs;
	bool more; /* it has more arguments than args holds */
};

struct pyd_greenlet {
	uint64_t id;     /* address of the greenlet object */
	int64_t thread;  /* OS tid, 0 if unknown */
	enum pyd_greenlet_state state;
	bool main;       /* a thread's main greenlet */
	uint64_t parent; /* id of its parent, 0 if none */
	char *spawned;   /* the callable it runs, as named; NULL if unknown */
	struct pyd_frame *frames; /* innermost first; none unless suspended */
	size_t nframes;
	size_t frames_cap; /* frames' room, reused by pyd_greenlets_reread */
	/* nframes entries once pyd_dump_locals ran, else NULL. */
	struct pyd_frame_vars *vars;
	/* A suspended greenlet's innermost frame's pending call, read by
	 * pyd_greenlets_waiting where the frame keeps it (3.14+); else NULL. */
	struct pyd_call *waiting;
	/* PYD_OK, or why frames is incomplete (it holds what we got). */
	enum pyd_err error;
};

struct pyd_greenlet_set {
	struct pyd_greenlet *g; /* in the collector's list order */
	size_t n;
	bool loaded;         /* the target imported greenlet */
	char release[32];    /* greenlet.__version__, "" if not read */
	bool unknown_layout; /* a release (or CPython) we have no table for */
	bool layout_dwarf;   /* the layout came from the module's debug info */
	bool truncated;      /* more than PYD_MAX_GREENLETS */
	const void *layout;  /* the release's row, for pyd_greenlets_reread */
};

/* Most greenlets we list, and objects of the collector's lists we look
 * at: a corrupt list must end. */
#define PYD_MAX_GREENLETS 1000000
#define PYD_MAX_GC_OBJECTS 50000000

/*
 * The greenlets of the target.  PYD_E_UNSUPPORTED if this CPython's
 * collector lists are not known; unknown_layout (with PYD_OK and no
 * greenlets) if the greenlet release is not one we can read.
 */
enum pyd_err pyd_dump_greenlets(struct pyd_session *s,
				struct pyd_greenlet_set *out);
/*
 * What each suspended greenlet of set waits on (struct
 * pyd_greenlet.waiting), for a dump: a sampler has no use for it.
 */
enum pyd_err pyd_greenlets_waiting(struct pyd_session *s,
				   struct pyd_greenlet_set *set);
/*
 * Read the greenlets of set again, as they are now, without looking for
 * new ones (the collector's lists are the costly part: a sampler walks
 * them now and then, and reads the greenlets it knows every round).  One
 * that is gone has error set; each keeps the thread it was found on and
 * what it was spawned with.
 */
enum pyd_err pyd_greenlets_reread(struct pyd_session *s,
				  struct pyd_greenlet_set *set);
void pyd_greenlet_set_free(struct pyd_greenlet_set *g);

#endif
