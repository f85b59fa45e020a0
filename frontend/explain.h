/*
 * What went wrong, said once for every shell: the CLI and both debugger
 * plugins explain an error (its cause and, where there is one, the fix)
 * through one table of messages (explain.c), and decide through one rule
 * whether an error stops a command.
 */
#ifndef PYD_FRONTEND_EXPLAIN_H
#define PYD_FRONTEND_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/pyd_error.h"
#include "../core/buf.h"

/* Where the words go: the CLI names the process or file it was given, a
 * debugger says "the program". */
enum pyd_shell {
	PYD_SHELL_CLI,
	PYD_SHELL_DEBUGGER,
};

/* What is being explained: an error, or a situation that is no error
 * code of its own. */
enum pyd_say {
	PYD_SAY_ERROR,             /* the error given */
	PYD_SAY_TASKS_UNSUPPORTED, /* no task graphs for this version */
	PYD_SAY_NO_ASYNCIO_OFFSETS, /* _asyncio's debug offsets not found */
	PYD_SAY_GREENLETS_UNSUPPORTED, /* no collector lists for this version */
	PYD_SAY_GREENLETS_FREE_THREADED, /* nor in a free-threading build */
	PYD_SAY_GREENLET_LAYOUT,   /* greenlet release {detail} not known */
	PYD_SAY_TRUNCATED,         /* the core misses bytes (count) */
	PYD_SAY_INCOMPLETE,        /* count threads or tasks not read */
	PYD_SAY_TASKS_PARTIAL,     /* the task lists not read to their end */
	PYD_SAY_SNAPSHOT_SAVE,     /* --save-snapshot failed */
	PYD_SAY_SNAPSHOT_NO_VARS,  /* --locals of one saved without them */
	PYD_SAY_CORRUPT,           /* memory found corrupt (detail: where) */
	PYD_SAY_SAMPLE_CORRUPT,    /* ... while sampling */
	PYD_SAY_CANNOT_WRITE,      /* the output file {file} */
	PYD_SAY_NO_TARGET,         /* a debugger with no process or core */
	PYD_SAY_NOT_STOPPED,       /* a debugger's process runs */
	PYD_SAY_SAMPLE_ON_CORE,    /* py-sample on a core */
	PYD_SAY_SAMPLE_REMOTE,     /* py-sample on another machine's process */
	PYD_SAY_SAMPLE_NO_PROC,    /* py-sample cannot read /proc/PID */
	PYD_SAY_SAMPLE_NO_CLI,     /* gdb's command file names no pystack-dump */
	PYD_SAY_LAUNCH_EXITED,     /* sample's program {file} ended first */
	PYD_SAY_MODE_UNSUPPORTED,  /* a sampling mode this Python lacks */
	PYD_SAY_PUSH_UNSUPPORTED,  /* --push in a build without libcurl
				    * (detail: why) */
	PYD_SAY_PUSH_FAILING,      /* {file} (a URL) not reached, retrying
				    * (detail: curl's or the status's words) */
	PYD_SAY_PUSH_REJECTED,     /* {file} refused a profile (detail: the
				    * status and the reply's first line) */
	PYD_SAY_PUSH_DROPPED,      /* the queue was full: the oldest dropped
				    * (count: the queue's size) */
	PYD_SAY_PUSH_UNSENT,       /* count profiles left unsent at the end */
	PYD_SAY_SKIPPED,           /* why a child process is not read: a
				    * reason, no prog, no newline */
	PYD_SAY_NATIVE_UNREAD,     /* count threads' native stacks not read */
	PYD_SAY_OTHER_ROOT,        /* core {file}'s files are not this
				    * machine's ({detail}: the first one) */
	PYD_SAY_CANNOT_READ,       /* the input file {file} */
	PYD_SAY_BAD_RECORDING,     /* {file} is no recording, or a corrupt one
				    * (PYD_E_PROFILE; partial: the samples
				    * before were reported) */
	PYD_SAY_RECORDING_CUT,     /* recording {file} ends mid-record, after
				    * count samples */
	PYD_SAY_CANNOT_LISTEN,     /* serve cannot listen on {file} (PYD_E_PERM:
				    * not allowed; else in use or not here) */
	PYD_SAY_NO_SERVE,          /* this build has no serve */
	PYD_SAY_NO_COREDUMP,       /* --coredump {file}: no core found
				    * (detail: where it was looked for) */
};

struct pyd_explain {
	const char *prog;    /* "pystack-dump", "py-bt", ... */
	enum pyd_shell shell;
	int pid;             /* the process (or the core's), <= 0: unknown */
	const char *file;    /* the core or snapshot read (NULL: a process),
			      * the file written, the program launched */
	bool live;           /* a live process (its reads can tear) */
	const char *version; /* the target's Python, if known */
	const char *detail;  /* what the failing call said; NULL or "" if
			      * nothing */
	/* PYD_SAY_TRUNCATED: bytes missing; PYD_SAY_INCOMPLETE: how many
	 * of what ("thread(s)", "task(s)") */
	unsigned long long count;
	const char *what;
	bool partial; /* PYD_SAY_TRUNCATED: some stacks could not be read;
		       * PYD_SAY_BAD_RECORDING: the samples before are
		       * reported */
};

/* The message for (say, err) as the shell says it, appended to out. */
void pyd_explain(struct pyd_buf *out, const struct pyd_explain *e,
		 enum pyd_say say, enum pyd_err err);

/* The message for err in a debugger command prog ("py-bt", ...). */
void pyd_explain_debugger(struct pyd_buf *out, const char *prog,
			  enum pyd_err err, const char *detail);

/* The message for a situation say in a debugger command prog, about
 * file (if it names one). */
void pyd_explain_debugger_say(struct pyd_buf *out, const char *prog,
			      enum pyd_say say, const char *file,
			      const char *detail);

/* Why --subprocesses reads no stack of a child, or samples no
 * descendant (err, detail): a reason, in out. */
void pyd_explain_skipped(enum pyd_err err, const char *detail, char *out,
                         size_t size);

/* Does err stop a command, with nothing to show?  Otherwise what was
 * decoded is shown, marked incomplete where it is. */
static inline bool pyd_err_fatal(enum pyd_err err)
{
	return err != PYD_OK && err != PYD_E_TORN;
}

#endif
