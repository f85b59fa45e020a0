/*
 * The memory source over gdb: target memory comes through the reader's
 * target_read, i.e. through gdb's target stack, so the same code reads a
 * live process, a core file or a gdbserver target, and never writes.
 * Mappings and threads come from what gdb printed into the request, or,
 * for a local process, from its /proc as pystack-dump reads them (so both
 * say exactly the same); and so does its memory where we may read it: a
 * target_read is a syscall and gdb's own work for each read, where the
 * process's source reads a batch of ranges in one (a 1,000-frame py-bt:
 * over a thousand reads).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

/* target_read takes an int length: big reads go in pieces. */
#define READ_CHUNK (1 << 20)

static enum pyd_err gdb_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct gdb_src *g = ctx;
	if (g->live_mem) {
		enum pyd_err err = g->live_src->read(g->live_src->ctx, addr, buf,
		                                     len);
		if (err != PYD_E_PERM)
			return err;
		/* gdb, the process's tracer, may read it where we may not. */
		g->live_mem = false;
	}
	for (size_t done = 0; done < len;) {
		size_t n = len - done < READ_CHUNK ? len - done : READ_CHUNK;
		if (g->target_read(addr + done, (char *)buf + done, (int)n) !=
		    GDB_SUCCESS)
			return PYD_E_READ;
		done += n;
	}
	return PYD_OK;
}

/* What the process's source did not read (an unmapped range, or one we
 * may not read) is read again one range at a time. */
static enum pyd_err gdb_readv(void *ctx, const struct pyd_iov *v, size_t n,
                              size_t *done)
{
	struct gdb_src *g = ctx;
	enum pyd_err err = PYD_OK;
	*done = 0;
	if (g->live_mem)
		err = g->live_src->readv(g->live_src->ctx, v, n, done);
	for (; err == PYD_OK && *done < n; ++*done)
		err = gdb_read(g, v[*done].addr, v[*done].buf, v[*done].len);
	return err == PYD_E_EXITED ? err : PYD_OK;
}

static enum pyd_err gdb_mappings(void *ctx, const struct pyd_mapping **maps,
                                 size_t *n)
{
	struct gdb_src *g = ctx;
	if (g->live_src)
		return g->live_src->mappings(g->live_src->ctx, maps, n);
	*maps = g->req->maps;
	*n = g->req->nmaps;
	return *n ? PYD_OK : PYD_E_NOTPYTHON;
}

static enum pyd_err gdb_threads(void *ctx, const struct pyd_os_thread **t,
                                size_t *n)
{
	struct gdb_src *g = ctx;
	if (g->live_src)
		return g->live_src->threads(g->live_src->ctx, t, n);
	*t = g->req->threads;
	*n = g->req->nthreads;
	return PYD_OK;
}

/* A core's or a remote target's files, where gdb says they are: under
 * its sysroot if one was set (a core from another machine). */
static int gdb_open_file(void *ctx, const struct pyd_mapping *m, char *used,
                         size_t usedsz)
{
	struct gdb_src *g = ctx;
	if (g->live_src)
		return g->live_src->open_file(g->live_src->ctx, m, used,
		                              usedsz);
	return m->path ? pyd_open_under(g->req->sysroot, m->path, used, usedsz)
	               : -1;
}

/* A remote target may be a process on this machine (gdbserver on
 * loopback): if a process of that pid has every thread gdb knows, it is
 * the one, and its /proc knows its files (even those only its own root
 * holds) better than gdb does. */
static bool is_local(const struct gdb_request *req)
{
	char path[64];
	if (req->pid <= 0 || !req->nthreads)
		return false;
	for (size_t i = 0; i < req->nthreads; i++) {
		snprintf(path, sizeof path, "/proc/%d/task/%lld", req->pid,
		         (long long)req->threads[i].tid);
		if (access(path, F_OK) != 0)
			return false;
	}
	return true;
}

void gdb_src_open(struct gdb_src *g, gdb_target_read *target_read,
                  const struct gdb_request *req)
{
	memset(g, 0, sizeof *g);
	g->target_read = target_read;
	g->req = req;
	bool local = req->kind == GDB_TARGET_PROCESS ||
	             (req->kind == GDB_TARGET_REMOTE && is_local(req));
	if (local && pyd_live_open(req->pid, &g->live) == PYD_OK) {
		g->live_src = pyd_live_memsrc(g->live);
		g->live_mem = true;
	}
	g->src = (struct pyd_memsrc){
	    .ctx = g,
	    .read = gdb_read,
	    .readv = gdb_readv,
	    .mappings = gdb_mappings,
	    .threads = gdb_threads,
	    .open_file = gdb_open_file,
	};
}

void gdb_src_close(struct gdb_src *g)
{
	pyd_live_close(g->live);
	memset(g, 0, sizeof *g);
}

void gdb_src_origin(const struct gdb_src *g, char *out, size_t outsz)
{
	const struct gdb_request *r = g->req;
	if (r->kind != GDB_TARGET_CORE)
		snprintf(out, outsz, "Process %d", r->pid);
	else if (r->pid > 0)
		snprintf(out, outsz, "Core file %s (process %d)", r->core,
		         r->pid);
	else
		snprintf(out, outsz, "Core file %s", r->core);
}
