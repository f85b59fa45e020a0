/*
 * One dump of a process, core or snapshot -- its thread stacks or its
 * task graph -- as pystack-dump PID prints it (and the Python API, which
 * runs it, returns it): the options checked, the target read, the report
 * written and how complete it is said, in one place.
 */
#ifndef PYD_FRONTEND_DUMP_H
#define PYD_FRONTEND_DUMP_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/buf.h"
#include "options.h"
#include "target.h"

struct pyd_dump_job {
	const char *prog; /* who says the messages: "pystack-dump" */
	struct target_spec spec;
	/* json, tasks, table, locals and repr, native, native_all, locked,
	 * no_source, save (as pyd_dump_check left them) */
	struct pyd_opts opt;
	/* One process of several (--subprocesses): its parent and command
	 * line head the report. */
	bool family;
	int ppid;
	const char *cmdline;
};

/* What one run gave besides its exit status. */
struct pyd_dump_outcome {
	/* The target was found to run a CPython we read: a failure came
	 * while decoding it, not while looking for it. */
	bool decoding;
	/* The report is the decoded dump (else it is empty, or the empty
	 * JSON document of a core too damaged to find the interpreter in). */
	bool shown;
};

/*
 * The options of a dump that do not go together, with the source the
 * spec names (whichever one it is): false with the message in err.
 * Sets opt->native for native_all.
 */
bool pyd_dump_check(const struct target_spec *spec, struct pyd_opts *opt,
                    char *err, size_t errsz);

/*
 * Read the target and append the report (text, or the JSON document) to
 * out; what the reader must know -- why nothing could be read, or what
 * is missing from the report -- to msg, as the message table says it.
 * Returns the exit status: PYD_OK, a fatal error (pyd_err_fatal: the
 * report is empty) or one saying the report is incomplete.
 */
enum pyd_err pyd_dump_run(const struct pyd_dump_job *j, struct pyd_buf *out,
                          struct pyd_buf *msg, struct pyd_dump_outcome *how);

#endif
