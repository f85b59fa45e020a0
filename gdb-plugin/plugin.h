/*
 * The gdb plugin's parts: the reader (reader.c) hands each request to the
 * memory source over gdb (gdbsrc.c) and to the command that runs it.
 */
#ifndef PYD_GDB_PLUGIN_H
#define PYD_GDB_PLUGIN_H

#include <gdb/jit-reader.h>

#include "memsrc/live.h"
#include "../frontend/commands.h"
#include "request.h"

/* Memory read through gdb's target stack (live, core, remote), with what
 * the request tells about the target's files and threads. */
struct gdb_src {
	struct pyd_memsrc src;
	gdb_target_read *target_read;
	const struct gdb_request *req;
	/* A local process: its /proc gives mappings, threads and files
	 * exactly as pystack-dump sees them. */
	struct pyd_live *live;
	const struct pyd_memsrc *live_src;
	bool live_mem; /* its memory too, until we may not read it */
};

void gdb_src_open(struct gdb_src *g, gdb_target_read *target_read,
                  const struct gdb_request *req);
void gdb_src_close(struct gdb_src *g);

/* "Process 1234", "Core file core.1234 (process 1234)". */
void gdb_src_origin(const struct gdb_src *g, char *out, size_t outsz);

/* py-sample: start sampling the inferior in the background; the command
 * file then lets it run until the sampler interrupts gdb.  What to tell
 * the user now (an error) goes to out. */
void gdb_sample_start(struct gdb_src *g, const struct pyd_cmd *c,
                      const char *base, struct pyd_buf *out);

#endif
