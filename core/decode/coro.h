/*
 * The coroutine model the task listers share (taskset.h says who does
 * what; coro.c how).
 */
#ifndef PYD_DECODE_CORO_H
#define PYD_DECODE_CORO_H

#include "taskset.h"

/* Where a generator's frame ends: tp_basicsize of generator types, whose
 * frame is the last member (one PyObject * per item after it); 0 where
 * the layout does not tell.  Kept in tctx.gen_size. */
size_t tasks_gen_size(const struct py_layout *L);
enum obj_kind tasks_kind(struct tctx *c, uint64_t obj);
enum obj_kind tasks_kind_of_type(struct tctx *c, uint64_t type);
/* Outermost first: the task's coroutine and what it awaits, down to the
 * first object that is no coroutine, generator or awaitable. */
enum pyd_err tasks_coro_chain(struct tctx *c, uint64_t coro,
			      struct pyd_frame_buf *out);
/* A running task: its thread's stack, innermost first, down to the frame
 * of its coroutine; *found false if that frame is not on the stack. */
enum pyd_err tasks_running_stack(struct tctx *c, uint64_t tstate,
				 uint64_t coro, struct pyd_frame_buf *out,
				 bool *found);
/* A task's name: a str, or the int N of "Task-N" until get_name() made
 * it a str; NULL if it is neither. */
char *tasks_name(struct tctx *c, uint64_t obj);

#endif
