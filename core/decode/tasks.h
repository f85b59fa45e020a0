/*
 * asyncio task graphs: the two listers the driver (tasks.c) picks from
 * (taskset.h says who does what).
 */
#ifndef PYD_DECODE_TASKS_H
#define PYD_DECODE_TASKS_H

#include "taskset.h"

/* Tasks from the interpreter's native task lists (tasks_native.c). */
extern const struct task_lister pyd_native_lister;
/* Tasks from the asyncio module's state (tasks_module.c). */
extern const struct task_lister pyd_module_lister;

#endif
