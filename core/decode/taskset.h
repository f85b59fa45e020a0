/*
 * asyncio task graphs, internals: one driver, two listers, one model of
 * coroutines, over one set of listed tasks.
 *
 *   tasks.c         the driver: list every interpreter's threads and, through
 *                   the listers, its tasks (again while the lists change under
 *                   us); read each task (name, state, thread, coroutine stack);
 *                   build the graph (awaited-by / awaits edges); find cycles.
 *   tasks_native.c  lister "tasks from the interpreter's native task lists"
 *                   (3.14+): the per-thread and per-interpreter lists of C
 *                   tasks described by the _asyncio module's debug offsets,
 *                   and the awaited-by edges CPython records between them.
 *   tasks_module.c  lister "tasks from the asyncio module's state" (3.7-3.13,
 *                   and the pure-Python tasks 3.14+ keeps there): the sets of
 *                   asyncio.tasks, and the edges derived from what each task
 *                   waits on.
 *   taskset.c       the listed tasks and threads, and the edges between
 *                   them, that the listers fill and the driver reads.
 *   coro.c          what objects are (generator, awaitable, task...), the
 *                   await chain from a task's coroutine down (frame objects,
 *                   embedded frames), a running task's stack, task names.
 *
 * The layout features decide which lister runs (py_layout_has_tasks:
 * native; py_layout_has_module_tasks: module state; both on 3.14+ when
 * pure-Python tasks can be read) and which frame model the coroutine model
 * uses; no version number is tested.
 *
 * Every pointer comes from the target (live, core or snapshot) and may be
 * stale or garbage: every read is checked, every loop bounded, a list that
 * changes under us is read again.
 */
#ifndef PYD_DECODE_TASKSET_H
#define PYD_DECODE_TASKSET_H

#include <stddef.h>
#include <stdint.h>

#include "asyncio_offsets.h"
#include "session.h"

/* Times we re-read the task lists when they changed under us. */
#define MAX_LIST_RETRIES 8
/* Times we re-read a task whose coroutine stack changed under us. */
#define MAX_TASK_RETRIES 4
/* Coroutines awaiting coroutines within one task. */
#define MAX_CORO_DEPTH 4096
/* Await cycles we record. */
#define MAX_CYCLES 1024
/* A type name longer than this is none we look for. */
#define MAX_TYPE_NAME 32
/* Types we remember; past this they are classified again each time. */
#define TYPE_CACHE 1024

#define TPFLAGS_LONG_SUBCLASS (1ULL << 24)
#define TPFLAGS_UNICODE_SUBCLASS (1ULL << 28)
/* enum fut_state in _asynciomodule.c (3.4+). */
#define FUT_PENDING 0
#define FUT_CANCELLED 1
#define FUT_FINISHED 2

/* What an object is, as far as tasks are concerned. */
enum obj_kind {
	KIND_OTHER,
	KIND_GEN,     /* generator, coroutine or async generator */
	KIND_AWAITER, /* async_generator_asend / _athrow: wraps an async gen */
	KIND_TASK,    /* _asyncio.Task or a subclass */
	KIND_PYTASK,  /* asyncio.tasks._PyTask or a subclass */
	KIND_METHOD,  /* bound method */
	KIND_FUNC,    /* Python function */
	KIND_NONE,    /* None */
};

struct type_entry {
	uint64_t addr; /* 0: free slot */
	enum obj_kind kind;
	uint64_t flags; /* tp_flags */
};

/* What listing a task gave us, before it is decoded. */
/* Tasks by id: open addressing, capacity a power of 2.  The graph keeps
 * the one its decoder built (pyd_task_find). */
struct pyd_task_index {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap;
};

struct raw_task {
	uint64_t id;
	uint64_t type;
	uint64_t name, coro;
	uint64_t awaited_by; /* 3.14+ C tasks: a task, a set, or 0 */
	bool awaited_by_is_set;
	int32_t state;  /* fut_state, -1 unknown */
	uint64_t waiter; /* task_fut_waiter / _fut_waiter: what it waits on */
	uint64_t loop;   /* its event loop (module state), or 0 */
	long thread;  /* index into the context's threads, -1: unknown */
	bool running; /* the running task of its thread */
	bool py;      /* a pure-Python task (attributes, not fields) */
	uint8_t lister; /* index of the lister that listed it */
};

struct thread_info {
	uint64_t tstate;
	int64_t tid;
	uint64_t pthread;      /* thread_id, what loop._thread_id holds */
	uint64_t running_task; /* 3.14+: the task it runs now, or 0 */
};

/* Where a TaskObj (a C task) keeps what both listers read, in bytes
 * (-1: not there): the built-in table's (3.7-3.13), or what the _asyncio
 * module publishes (3.14+, set when tasks_native.c opens). */
struct task_fields {
	int64_t size, name, coro, state, waiter;
};

struct tctx;

/* Where tasks come from (tasks_native.c, tasks_module.c). */
struct task_lister {
	/* Once, before listing: what the lister needs from the target.
	 * PYD_OK with *none set: the target has no such tasks. */
	enum pyd_err (*open)(struct tctx *c, bool *none);
	/* What a thread state says about tasks (the task it runs now). */
	enum pyd_err (*thread)(struct tctx *c, struct thread_info *t);
	/* Append one interpreter's tasks to c->raw; PYD_E_TORN or
	 * PYD_E_READ if its lists changed under us. */
	enum pyd_err (*list)(struct tctx *c, uint64_t interp,
			     struct pyd_task_graph *g);
	/* A listed task whose coroutine stack changed under us: its state
	 * now (PYD_TASK_UNKNOWN if it cannot tell) and its coroutine. */
	enum pyd_task_state (*state_now)(struct tctx *c,
					 const struct raw_task *r,
					 uint64_t *coro);
	/* The awaited-by edges of task i that CPython records, once it is
	 * decoded as t (may list the awaiters as tasks); NULL if none are. */
	enum pyd_err (*task_edges)(struct tctx *c, size_t i,
				   struct pyd_task *t);
	/* The edges derived from what every task waits on, once all are
	 * decoded; NULL if not needed. */
	enum pyd_err (*derived_edges)(struct tctx *c);
};

struct tctx {
	struct pyd_session *s;
	const struct py_layout *L;
	const struct task_lister *listers[2];
	size_t nlisters;
	size_t lister;       /* the one listing (or decoding) now */
	size_t first_thread; /* the interpreter being listed: its threads */
	bool asyncio_known; /* a lister found asyncio loaded when opened */
	struct pyd_asyncio_offsets ao; /* tasks_native.c's */
	struct task_fields tf;
	size_t gen_size; /* tasks_gen_size(L): asked of every object */
	struct pyd_frame_buf fb; /* a task's frames, read before kept */
	/* The page cache a one-shot graph's passes read through (tasks.c);
	 * paged.on false for the sampler's */
	struct pyd_paged paged;
	/* Listing */
	uint64_t *interps; /* PYD_MAX_INTERPS of them, while listing */
	struct raw_task *raw;
	size_t nraw, rawcap;
	struct thread_info *threads;
	size_t nthreads, threadcap;
	struct pyd_task_index ix; /* id -> index into raw (and the graph) */
	/* Types of the tasks we listed: an awaiter of one of these types is a
	 * task too, even if no list holds it. */
	uint64_t task_types[16];
	size_t ntask_types;
	/* asyncio.tasks._PyTask of each interpreter (pure-Python tasks are
	 * instances of it or of its subclasses) */
	uint64_t pytask_types[16];
	size_t npytask_types;
	struct type_entry types[TYPE_CACHE];
	size_t ntypes;
	bool capped; /* PYD_MAX_TASKS listed: the rest are left out */
	/* The last event loop whose thread was asked (tasks share a few). */
	uint64_t last_loop;
	long last_loop_thread;
	/* Per-task awaited-by (indexes into raw), filled while decoding */
	uint32_t **ab;
	size_t *nab;
	size_t abcap;
};

/* ---- taskset.c: the listed tasks, for the listers and the driver ---- */

enum pyd_err tasks_rd(struct tctx *c, uint64_t addr, void *buf, size_t len);
/* Index of the task with this id, or -1. */
long tasks_find_task(const struct tctx *c, uint64_t id);
void tasks_index_free(struct pyd_task_index *ix);
/* A new raw task for id, listed by the lister listing now (zeroed but for
 * id, state -1 and thread -1), or NULL: *err PYD_E_TORN if it is listed
 * already, PYD_E_NOMEM, or PYD_OK with c->capped set past PYD_MAX_TASKS. */
struct raw_task *tasks_add(struct tctx *c, uint64_t id, enum pyd_err *err);
/* Index of the thread whose pthread_t is pth, or -1. */
long tasks_thread_by_pthread(const struct tctx *c, uint64_t pth);
/* Record that task i is awaited by task waiter (once). */
enum pyd_err tasks_edge(struct tctx *c, size_t i, size_t waiter);
enum pyd_task_state tasks_task_state(int32_t st);
/* The built-in table's TaskObj fields (tf's default). */
struct task_fields tasks_builtin_fields(const struct py_layout *L);
/* A C task's type, name, coroutine, what it waits on and its state, from
 * its TaskObj read whole (c->tf.size bytes) into obj. */
void tasks_fields(const struct tctx *c, const uint8_t *obj,
		  struct raw_task *r);
/* A listed C task's state and coroutine, read again. */
enum pyd_task_state tasks_state_now(struct tctx *c, const struct raw_task *r,
				    uint64_t *coro);

#endif
