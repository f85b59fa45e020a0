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

#include "memsrc/memsrc.h"
#include "pyd_error.h"
#include "runtime/runtime.h"

struct pyd_frame {
	const char *function; /* co_name */
	const char *qualname; /* co_qualname (3.11+), else NULL */
	const char *file;     /* co_filename */
	int line;             /* current line, -1 if it has none */
};

struct pyd_thread {
	int64_t tid;       /* OS thread id, 0 if unknown */
	int64_t interp_id; /* interpreter the thread belongs to */
	char name[32];     /* OS thread name, "" if unknown */
	bool holds_gil;
	enum pyd_thread_run run;
	struct pyd_frame *frames; /* innermost first */
	size_t nframes;
	/* PYD_OK, or why the stack is incomplete (frames holds what we got). */
	enum pyd_err error;
	bool truncated; /* deeper than PYD_MAX_FRAMES */
};

struct pyd_dump {
	struct pyd_thread *threads;
	size_t nthreads;
	size_t ninterps;
	unsigned retries; /* torn reads we retried */
};

/* Deepest stack we walk; Python's own recursion limit is far below. */
#define PYD_MAX_FRAMES 100000

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
/* Where the layout came from: "debug offsets" or "built-in table". */
const char *pyd_session_layout_source(const struct pyd_session *s);

/* Every thread of every interpreter with its Python stack. */
enum pyd_err pyd_dump_stacks(struct pyd_session *s, struct pyd_dump *out);
void pyd_dump_free(struct pyd_dump *d);

#endif
