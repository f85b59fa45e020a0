/*
 * The sampling modes' table (modes.h): what each samples, and the
 * functions of its own the sampler calls for it (rounds.h).
 */
#include <string.h>

#include "modes.h"
#include "rounds.h"

const struct pyd_sample_mode_row pyd_sample_modes[PYD_SAMPLE_MODES] = {
    [PYD_SAMPLE_WALL] =
        {
            .name = "wall",
            .help = "every thread, every tick (default)",
            .pick = PYD_PICK_ALL,
            .idle_threads = true,
            .round = pyd_round_threads,
        },
    [PYD_SAMPLE_CPU] =
        {
            .name = "cpu",
            .help = "only threads on a CPU at the tick",
            .pick = PYD_PICK_ON_CPU,
            .idle_threads = true,
            .round = pyd_round_threads,
        },
    [PYD_SAMPLE_GIL] =
        {
            .name = "gil",
            .help = "only the thread holding the GIL; every\n"
                    "0.1 s, who waits for it: the summary\n"
                    "says how contended it was",
            .pick = PYD_PICK_GIL_HOLDER,
            .reads = PYD_READ_GIL | PYD_READ_GIL_WAITERS,
            .idle_threads = true,
            .refusal = "-m gil is not supported on Python %s, a "
                       "free-threading build: it has no GIL, its threads "
                       "run Python at the same time (-m cpu samples the "
                       "threads on a CPU)",
            .open = pyd_open_gil,
            .round = pyd_round_threads,
        },
    [PYD_SAMPLE_ASYNC] =
        {
            .name = "async",
            .help = "every asyncio task: running ones at their\n"
                    "code, waiting ones at the await they sit\n"
                    "in, joined to the tasks awaiting them",
            .pick = PYD_PICK_NONE,
            .unit = "task",
            .running = "Tasks",
            .waiting = "awaiting",
            .sites_title = "Await sites (samples of tasks suspended there)",
            .sites_column = "await at",
            .summary = "task samples on CPU %llu, awaiting %llu",
            .none_found =
                "-m async found no asyncio task to sample: the process has "
                "not imported asyncio, or had no pending task (pystack-dump "
                "--tasks %d says which, and names another event loop it "
                "runs); the other modes sample its threads",
            .refusal = "-m async is not supported on Python %s: it needs "
                       "asyncio task graphs (CPython 3.7 and later)",
            .open = pyd_open_tasks,
            .round = pyd_round_tasks,
        },
    [PYD_SAMPLE_EXCEPTION] =
        {
            .name = "exception",
            .help = "only threads raising an exception\n"
                    "or in an except/finally handling one",
            .pick = PYD_PICK_IN_EXCEPTION,
            .reads = PYD_READ_EXC,
            .idle_threads = true,
            .refusal = "-m exception is not supported on Python %s: its "
                       "layout has no thread exception state",
            .open = pyd_open_exception,
            .round = pyd_round_threads,
        },
    [PYD_SAMPLE_GREENLET] =
        {
            .name = "greenlet",
            .help = "every greenlet (greenlet, gevent): the\n"
                    "running ones where their thread runs,\n"
                    "under <greenlet NAME>; switched-out ones\n"
                    "at the call they switched away in (the\n"
                    "greenlet releases --greenlets reads)",
            .pick = PYD_PICK_ALL,
            .reads = PYD_READ_RUN_STATE,
            .unit = "greenlet",
            .running = "Greenlets running",
            .waiting = "switched out",
            .sites_title = "Switch-out sites (samples of greenlets "
                           "switched out there)",
            .sites_column = "switched out at",
            .summary = "greenlet samples running %llu, switched out %llu",
            .refusal = "-m greenlet is not supported on Python %s: it "
                       "needs greenlet loaded, in a release --greenlets "
                       "reads (3.3), on CPython 3.14 or 3.15 (not a "
                       "free-threading build)",
            .open = pyd_open_greenlets,
            .round = pyd_round_greenlets,
            .record = pyd_record_greenlet,
        },
};

const char *pyd_sample_mode_name(enum pyd_sample_mode m)
{
	return (unsigned)m < PYD_SAMPLE_MODES ? pyd_sample_modes[m].name
	                                      : "unknown";
}

bool pyd_sample_mode_named(const char *name, enum pyd_sample_mode *m)
{
	for (unsigned i = 0; i < PYD_SAMPLE_MODES; i++)
		if (!strcmp(name, pyd_sample_modes[i].name)) {
			*m = (enum pyd_sample_mode)i;
			return true;
		}
	return false;
}
