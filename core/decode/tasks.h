/*
 * asyncio task decoding, internals.
 *
 * 3.14+ publishes where the asyncio Task object keeps what a debugger
 * needs in _Py_AsyncioModuleDebugOffsets, a struct of uint64_t the
 * _asyncio module puts in an ELF section of its own (.AsyncioDebug).  It
 * has the same members in 3.14 and 3.15 (Modules/_asynciomodule.c):
 *
 *   asyncio_task_object: size, task_name, task_awaited_by, task_is_task,
 *                        task_awaited_by_is_set, task_coro, task_node
 *   asyncio_interpreter_state: size, asyncio_tasks_head
 *   asyncio_thread_state: size, asyncio_running_loop,
 *                         asyncio_running_task, asyncio_tasks_head
 *
 * Earlier versions keep tasks in WeakSets / sets of the asyncio.tasks
 * module instead; their decoder (3.7-3.13, the "CPython 3.7 - 3.13"
 * section of tasks.c, with the generic object readers of objects.c and
 * the struct py_old_tasks offsets of the built-in layout table) fills the
 * same struct pyd_task_graph.  3.14+ still keeps pure-Python tasks
 * there: the 3.14+ decoder lists those with the same code.
 */
#ifndef PYD_DECODE_TASKS_H
#define PYD_DECODE_TASKS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "session.h"

/* sizeof(struct _Py_AsyncioModuleDebugOffsets): 13 uint64_t. */
#define PYD_ASYNCIO_OFFSETS_SIZE 104

struct pyd_asyncio_offsets {
	/* TaskObj */
	uint64_t task_size;
	uint64_t task_name;       /* PyObject *: str, or int until named */
	uint64_t task_awaited_by; /* PyObject *: a task, a set, or NULL */
	uint64_t task_is_task;    /* char */
	uint64_t task_awaited_by_is_set; /* char */
	uint64_t task_coro;       /* PyObject * */
	uint64_t task_node;       /* struct llist_node */
	/* Not published: FutureObj_HEAD has `fut_state` (an int enum) right
	 * after the awaited_by pointer and before is_task in 3.14 and 3.15;
	 * we use it only when the published offsets leave exactly that
	 * 4-byte gap, else -1 (state unknown). */
	int64_t task_state;
	/* PyInterpreterState: tasks of threads that have exited */
	uint64_t interp_size;
	uint64_t interp_tasks_head;
	/* _PyThreadStateImpl */
	uint64_t tstate_size;
	uint64_t tstate_running_loop;
	uint64_t tstate_running_task;
	uint64_t tstate_tasks_head;
};

/* Parse and sanity-check the raw block (little-endian, as the target
 * holds it); -1 if it is too short or not plausible. */
int pyd_asyncio_offsets_parse(const uint8_t *raw, size_t len,
			      struct pyd_asyncio_offsets *out);

/* ---- shared by tasks.c (3.14+) and tasks_legacy.c (3.7-3.13) ---------- */

#define MAX_TASK_SIZE 4096
#define MAX_INTERP_SIZE (16u << 20)
#define MAX_TSTATE_SIZE (64u << 10)
#define MAX_INTERPS 4096
#define MAX_THREADS 65536
/* Times we re-read the task lists when they changed under us. */
#define MAX_LIST_RETRIES 8
/* Times we re-read a task whose coroutine stack changed under us. */
#define MAX_TASK_RETRIES 4
/* Coroutines awaiting coroutines within one task. */
#define MAX_CORO_DEPTH 4096
/* Slots of an awaited-by set we read (a set of 2^20 awaiters is 16 MiB). */
#define MAX_SET_SLOTS (1u << 20)
/* Await cycles we record. */
#define MAX_CYCLES 1024
/* A type name longer than this is none we look for. */
#define MAX_TYPE_NAME 32
/* Types we remember; past this they are classified again each time. */
#define TYPE_CACHE 1024
/* A task's name as a Python int (before get_name() made it a str) has
 * this many 30-bit digits at most for us: 2^60 tasks is plenty. */
#define MAX_NAME_DIGITS 2
/* We read this much of a generator object at once: its header and frame
 * and, usually, the value stack slot that says what it awaits. */
#define GEN_READ 512
/* ... and of a task's name: a short ASCII str, header and all. */
#define NAME_READ 128

#define TPFLAGS_LONG_SUBCLASS (1ULL << 24)
#define TPFLAGS_UNICODE_SUBCLASS (1ULL << 28)
#define FRAME_OWNED_BY_GENERATOR 1
/* enum fut_state in _asynciomodule.c (3.4+). */
#define FUT_PENDING 0
#define FUT_CANCELLED 1
#define FUT_FINISHED 2

/* ---- decoding context ------------------------------------------------ */

enum obj_kind {
	KIND_OTHER,   /* not something we follow */
	KIND_GEN,     /* generator, coroutine or async generator */
	KIND_AWAITER, /* async_generator_asend / _athrow: wraps an async gen */
};

struct type_entry {
	uint64_t addr; /* 0: free slot */
	uint64_t flags;
	enum obj_kind kind;
};

/* What listing a task gave us, before it is decoded. */
struct raw_task {
	uint64_t id;
	uint64_t type;
	uint64_t name, awaited_by, coro;
	bool awaited_by_is_set;
	int32_t state; /* fut_state, -1 unknown */
	int64_t tid;
	uint64_t tstate; /* the thread state whose list holds it, or 0 */
	/* <= 3.13 only */
	uint64_t waiter, loop; /* task_fut_waiter, fut_loop */
	bool running;          /* a value of asyncio.tasks._current_tasks */
	bool py;               /* a pure-Python task (attributes, not fields) */
};

struct thread_info {
	uint64_t tstate;
	int64_t tid;
	uint64_t pthread; /* <= 3.13: thread_id, what loop._thread_id holds */
	uint64_t running_task; /* 0 if none */
};

struct tctx {
	struct pyd_session *s;
	const struct py_layout *L;
	struct pyd_asyncio_offsets ao;
	/* Listing */
	struct raw_task *raw;
	size_t nraw, rawcap;
	struct thread_info *threads;
	size_t nthreads, threadcap;
	/* id -> index into raw; open addressing, capacity a power of 2 */
	uint64_t *hkeys;
	uint32_t *hvals;
	size_t hcap;
	/* Types of the tasks we listed: an awaiter of one of these types is a
	 * task too, even if no list holds it. */
	uint64_t task_types[16];
	size_t ntask_types;
	/* <= 3.13: asyncio.tasks._PyTask of each interpreter (pure-Python
	 * tasks are instances of it or of its subclasses) */
	uint64_t pytask_types[16];
	size_t npytask_types;
	struct type_entry types[TYPE_CACHE];
	size_t ntypes;
	struct type_entry scratch;
	bool capped; /* PYD_MAX_TASKS listed: the rest are left out */
	/* 3.14+: edges between two C tasks come from their awaited_by;
	 * the <= 3.13 derivation (tasks_py_edges) adds only the edges a
	 * pure-Python task is on, which CPython does not record. */
	bool native_edges;
	/* Per-task awaited-by ids (indexes into raw), filled while decoding */
	uint32_t **ab;
	size_t *nab;
};

enum pyd_err tasks_add_thread(struct tctx *c, uint64_t tstate, int64_t tid,
                              uint64_t running);
enum pyd_err tasks_begin_pass(struct tctx *c, uint64_t *interps,
                              size_t *ninterps);
enum pyd_err tasks_build_awaits(struct tctx *c, struct pyd_task_graph *g);
void tasks_ctx_free(struct tctx *c);
enum pyd_err tasks_find_cycles(struct tctx *c, struct pyd_task_graph *g);
long tasks_find_task(const struct tctx *c, uint64_t id);
enum pyd_err tasks_grow_tasks(struct tctx *c, struct pyd_task_graph *g,
                              size_t *cap);
bool tasks_hgrow(struct tctx *c);
size_t tasks_hslot(const struct tctx *c, uint64_t id);
enum pyd_err tasks_rd(struct tctx *c, uint64_t addr, void *buf, size_t len);
void tasks_reverse_frames(struct pyd_frame *f, size_t n);
enum pyd_task_state tasks_task_state(int32_t st);
/* CPython 3.7 - 3.13: tasks from the asyncio module state (tasks_legacy.c). */
enum pyd_err tasks_dump_legacy(struct pyd_session *s, struct pyd_task_graph *g);
/* 3.14+: the pure-Python tasks of one interpreter, from its asyncio.tasks
 * module (tasks_legacy.c); c->threads must hold its threads, with their
 * pthread ids (a task's thread is the one running its loop). */
enum pyd_err tasks_list_py(struct tctx *c, uint64_t interp,
			   struct pyd_task_graph *g);
/* 3.14+: the await edges a pure-Python task is on, derived as <= 3.13
 * (tasks_legacy.c); every raw task's ab / nab must be set. */
enum pyd_err tasks_py_edges(struct tctx *c);

#endif
