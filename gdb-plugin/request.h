/*
 * A request from the command file to the reader.
 *
 * The command file cannot call the reader: it pipes what gdb knows (the
 * command and its words, `info inferiors`, `info threads`, the target
 * stack and its files, but for a local process `info proc mappings`, for
 * py-bt -n the `bt` of the selected thread) into a file, each part under
 * an "@name" line, and makes gdb unwind; the reader's unwind callback
 * finds the file and parses it with this.
 */
#ifndef PYD_GDB_REQUEST_H
#define PYD_GDB_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "memsrc/memsrc.h"
#include "../frontend/commands.h"

/* The request's last line: the command file writes a request straight
 * into its file while gdb still prints it, and gdb may unwind (and call
 * the reader) meanwhile; a request without this line is not whole yet. */
#define GDB_REQUEST_END "@end"
/* The variable of gdb's environment in which the reader leaves its
 * files' base, ${TMPDIR:-/tmp}/pystack-dump-gdb-UID/GDBPID, for the
 * command file's shells. */
#define PYD_GDB_BASE_ENV "PYSTACK_DUMP_GDB"
/* The variable in which it leaves the shell functions of the command
 * file's steps (shell.h). */
#define PYD_GDB_SH_ENV "PYSTACK_DUMP_GDB_SH"

/* Whether text (a request file's) has its last line. */
bool gdb_request_whole(const char *text);

enum gdb_target_kind {
	GDB_TARGET_NONE,
	GDB_TARGET_PROCESS, /* a native (local) process */
	GDB_TARGET_CORE,
	GDB_TARGET_REMOTE, /* gdbserver and friends */
};

struct gdb_request {
	char *text;       /* the file, split in place */
	const char *name; /* "py-bt" ... */
	char args[512];   /* its words, blank-separated */
	const char *cli;  /* pystack-dump, for py-sample */
	enum gdb_target_kind kind;
	const char *core; /* the core file, as gdb names it */
	const char *sysroot; /* gdb's `set sysroot`, NULL if the target's own */
	int pid;          /* the inferior's pid, 0 if unknown */
	int64_t selected; /* the selected thread's LWP, 0 if unknown */
	struct pyd_mapping *maps;
	size_t nmaps;
	struct pyd_os_thread *threads;
	size_t nthreads;
	struct pyd_native_frame *native; /* innermost first */
	size_t nnative;
};

/* Parse text (malloc'd; the request takes it).  false if it is not a
 * request at all (no command). */
bool gdb_request_parse(char *text, struct gdb_request *r);
void gdb_request_free(struct gdb_request *r);

#endif
