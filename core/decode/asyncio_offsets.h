/*
 * The _asyncio module's debug offsets (3.14+).
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
 */
#ifndef PYD_DECODE_ASYNCIO_OFFSETS_H
#define PYD_DECODE_ASYNCIO_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* Largest TaskObj, PyInterpreterState and _PyThreadStateImpl we accept. */
#define MAX_TASK_SIZE 4096
#define MAX_INTERP_SIZE (16u << 20)
#define MAX_TSTATE_SIZE (64u << 10)

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

/* Address of the block found by content in the target's writable
 * mappings of _asyncio / the interpreter (3.14+, no binaries), or 0. */
uint64_t pyd_asyncio_find_block(struct pyd_session *s);

#endif
