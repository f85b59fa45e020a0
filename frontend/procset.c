/*
 * The processes a sample run reads (procset.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/grow.h"
#include "../core/memsrc/live.h"
#include "explain.h"
#include "procset.h"

/* How often --subprocesses looks for new descendants. */
#define SCAN_NS 100000000LL
/* How long a new descendant may take to show a Python runtime (an
 * interpreter starting up) before it is skipped as not Python. */
#define STARTUP_NS 2000000000LL

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- counting reads ---- */

static enum pyd_err c_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct counted *c = ctx;
	c->reads++;
	return pyd_read(c->layer.inner, addr, buf, len);
}

static enum pyd_err c_readv(void *ctx, const struct pyd_iov *v, size_t n,
                            size_t *done)
{
	struct counted *c = ctx;
	c->reads++;
	return pyd_readv(c->layer.inner, v, n, done);
}

static enum pyd_err c_thread_run(void *ctx, int64_t tid,
                                 enum pyd_thread_run *run)
{
	struct counted *c = ctx;
	c->reads++;
	const struct pyd_memsrc *in = c->layer.inner;
	return in->thread_run(in->ctx, tid, run);
}

static void count_reads(struct counted *c, const struct pyd_memsrc *in)
{
	*c = (struct counted){0};
	pyd_layer_init(&c->layer, in, c_read, c_readv);
	if (in->thread_run)
		c->layer.src.thread_run = c_thread_run;
}

/* ---- one process ---- */

static void close_sources(struct sampled *e)
{
	pyd_sampler_close(e->sp);
	pyd_session_close(e->sess);
	target_close(&e->t);
	e->sp = NULL;
	e->sess = NULL;
	e->sampling = false;
}

/* Whether e's process ran exec since its command line was read: the
 * program we opened may be the one before (a launched or spawned child
 * between its fork and its exec). */
static bool ran_exec(const struct sampled *e)
{
	char now[sizeof e->cmdline];
	pyd_live_cmdline(e->pid, now, sizeof now);
	return now[0] && strcmp(now, e->cmdline);
}

/* Open e's process for sampling and give it a place in the profile. */
static enum pyd_err open_sources(struct procset *ps, struct sampled *e,
                                 char *detail, size_t detailsz)
{
	struct target_spec spec = {.pid = e->pid};
	struct pyd_runtime rt;
	/* The command line is read before the open and checked after it: a
	 * process that ran exec in between was opened as the new program
	 * under the old one's command line, and the next scan, seeing the
	 * new one, would end it as exited and list its pid again. */
	pyd_live_cmdline(e->pid, e->cmdline, sizeof e->cmdline);
	/* A target that failed to open may hold what it opened so far (a
	 * live source refused its maps): target_close frees it. */
	enum pyd_err err = target_open(&spec, &e->t, detail, detailsz);
	if (err) {
		target_close(&e->t);
		return err;
	}
	err = target_runtime(&e->t, &rt, detail, detailsz);
	if (!err) {
		count_reads(&e->counted, e->t.src);
		err = pyd_session_open(&e->counted.layer.src, &rt, &e->sess, detail,
		                       detailsz);
	}
	if (!err && ran_exec(e))
		err = PYD_E_EXITED; /* the program opened is gone: again later */
	uint32_t index = PYD_PROF_NONE;
	if (!err) {
		index = pyd_profile_process(ps->prof, e->pid, e->ppid,
		                            e->cmdline,
		                            pyd_session_version(e->sess));
		if (index == PYD_PROF_NONE)
			err = PYD_E_NOMEM;
	}
	if (!err)
		err = pyd_sampler_open(e->sess, ps->mode, ps->prof, index,
		                       &e->sp);
	if (err == PYD_E_UNSUPPORTED && e->sess) {
		ps->mode_unsupported = true;
		snprintf(detail, detailsz, pyd_sample_mode(ps->mode)->refusal,
		         pyd_session_version(e->sess));
	}
	if (err) {
		/* Registered but never sampled: leave no empty process. */
		if (index != PYD_PROF_NONE && index + 1 == ps->prof->nprocesses)
			ps->prof->nprocesses--;
		close_sources(e);
		return err;
	}
	e->index = index;
	e->sampling = true;
	return PYD_OK;
}

static struct sampled *add_entry(struct procset *ps, int pid, int ppid)
{
	if (!pyd_grow_from((void **)&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v,
	                   8))
		return NULL;
	struct sampled *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->pid = pid;
	e->ppid = ppid;
	e->seen_ns = now_ns();
	pyd_live_cmdline(pid, e->cmdline, sizeof e->cmdline);
	ps->v[ps->n++] = e;
	return e;
}

/* Forget entry i; a process that was sampled stays in the profile (marked
 * exited if it did). */
static void drop_entry(struct procset *ps, size_t i, bool exited)
{
	struct sampled *e = ps->v[i];
	if (e->sampling && exited)
		ps->prof->processes[e->index].exited = true;
	ps->reads_done += e->counted.reads;
	close_sources(e);
	free(e);
	memmove(ps->v + i, ps->v + i + 1, (ps->n - i - 1) * sizeof *ps->v);
	ps->n--;
}

/* A descendant we will not sample: said in the summary. */
static void note_skipped(struct procset *ps, const struct sampled *e,
                         const char *why)
{
	char cmd[sizeof e->cmdline];
	bool whole = pyd_one_line(e->cmdline[0] ? e->cmdline : "?", cmd,
	                          sizeof cmd);
	if (ps->nskipped < PROCSET_SKIPPED_SHOWN)
		snprintf(ps->skipped[ps->nskipped], sizeof ps->skipped[0],
		         "pid %d (%s%s; parent %d): %s", e->pid, cmd,
		         whole ? "" : "...", e->ppid, why);
	ps->nskipped++;
}

/* ---- following descendants ---- */

static struct sampled *entry_of(const struct procset *ps, int pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->pid == pid)
			return ps->v[i];
	return NULL;
}

/* A pending entry: sample it if it runs Python by now; skip it once it
 * has had its time to start, or cannot be read at all. */
static void try_pending(struct procset *ps, struct sampled *e, int64_t now)
{
	char detail[256] = "";
	enum pyd_err err = open_sources(ps, e, detail, sizeof detail);
	if (!err || err == PYD_E_NOMEM)
		return;
	bool starting = err == PYD_E_NOTPYTHON && now - e->seen_ns < STARTUP_NS;
	if (starting || err == PYD_E_NOPROC || err == PYD_E_EXITED)
		return; /* again next scan; gone ones leave the family */
	char why[200];
	pyd_explain_skipped(err, detail, why, sizeof why);
	note_skipped(ps, e, why);
	e->seen_ns = INT64_MAX; /* skipped until it runs exec */
}

/* One member of the family now: new, or run exec since (its command line
 * changed), or as it was.  One there before sampling began (initial) had
 * its time to start up. */
static void visit(struct procset *ps, const struct pyd_proc *p, int64_t now,
                  bool initial)
{
	struct sampled *e = entry_of(ps, p->pid);
	char cmd[sizeof e->cmdline];
	if (p->pid == ps->self)
		return;
	if (e) {
		pyd_live_cmdline(p->pid, cmd, sizeof cmd);
		if (!cmd[0] || !strcmp(cmd, e->cmdline)) {
			if (!e->sampling && e->seen_ns != INT64_MAX)
				try_pending(ps, e, now);
			return;
		}
		/* exec: the process we sampled is over; a new one starts. */
		for (size_t i = 0; i < ps->n; i++)
			if (ps->v[i] == e) {
				drop_entry(ps, i, true);
				break;
			}
	}
	e = add_entry(ps, p->pid, p->ppid);
	if (!e)
		return;
	if (initial)
		e->seen_ns = now - STARTUP_NS;
	try_pending(ps, e, now);
}

/* Where to look for descendants: the root while it runs, else each
 * process we hold whose parent we do not (orphans are adopted by init). */
static bool is_top(const struct procset *ps, const struct sampled *e)
{
	return e->sampling && !entry_of(ps, e->ppid);
}

static void scan(struct procset *ps, int64_t now, bool initial)
{
	int tops[64];
	size_t ntops = 0;
	if (ps->all)
		tops[ntops++] = 1; /* init: every process is its family */
	else if (entry_of(ps, ps->root))
		tops[ntops++] = ps->root;
	else
		for (size_t i = 0; i < ps->n && ntops < 64; i++)
			if (is_top(ps, ps->v[i]))
				tops[ntops++] = ps->v[i]->pid;
	for (size_t t = 0; t < ntops; t++) {
		struct pyd_proc *fam;
		size_t n;
		if (pyd_live_family(tops[t], &fam, &n))
			continue;
		for (size_t i = 0; i < n; i++)
			visit(ps, &fam[i], now, initial);
		free(fam);
	}
	/* Pending and skipped ones that are gone are forgotten. */
	for (size_t i = ps->n; i-- > 0;)
		if (!ps->v[i]->sampling && pyd_live_parent(ps->v[i]->pid) < 0)
			drop_entry(ps, i, true);
	ps->scanned_ns = now;
}

/* ---- the set ---- */

void procset_init(struct procset *ps, struct pyd_profile *prof,
                  enum pyd_sample_mode mode, bool follow)
{
	*ps = (struct procset){.prof = prof, .mode = mode, .follow = follow};
	ps->scanned_ns = now_ns();
}

enum pyd_err procset_add(struct procset *ps, int pid, char *detail,
                         size_t detailsz)
{
	if (!ps->n)
		ps->root = pid;
	struct sampled *e = add_entry(ps, pid, pyd_live_parent(pid));
	if (!e)
		return PYD_E_NOMEM;
	enum pyd_err err = open_sources(ps, e, detail, detailsz);
	if (err)
		drop_entry(ps, ps->n - 1, false);
	return err;
}

/* A root that is not Python (a shell, a supervisor, a launched wrapper)
 * with descendants: skipped like any of them, which are sampled once
 * they run Python (given their time to start: a launched shell's child
 * is new).  PYD_E_NOTPYTHON, said in detail, if it has none. */
static enum pyd_err skip_root(struct procset *ps, int pid, char *detail,
                              size_t detailsz)
{
	char why[200];
	struct sampled *e = add_entry(ps, pid, pyd_live_parent(pid));
	if (!e)
		return PYD_E_NOMEM;
	pyd_live_cmdline(pid, e->cmdline, sizeof e->cmdline);
	pyd_explain_skipped(PYD_E_NOTPYTHON, NULL, why, sizeof why);
	note_skipped(ps, e, why);
	e->seen_ns = INT64_MAX; /* skipped until it runs exec */
	scan(ps, now_ns(), false);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->sampling || ps->v[i]->seen_ns != INT64_MAX)
			return PYD_OK;
	snprintf(detail, detailsz, "neither Python nor a parent of one");
	return PYD_E_NOTPYTHON;
}

enum pyd_err procset_open(struct procset *ps, int pid, struct pyd_profile *prof,
                          enum pyd_sample_mode mode, bool follow,
                          char *detail, size_t detailsz)
{
	procset_init(ps, prof, mode, follow);
	enum pyd_err err = procset_add(ps, pid, detail, detailsz);
	if (!err && follow)
		scan(ps, now_ns(), true);
	if (err == PYD_E_NOTPYTHON && follow)
		err = skip_root(ps, pid, detail, detailsz);
	return err;
}

void procset_open_all(struct procset *ps, struct pyd_profile *prof,
                      enum pyd_sample_mode mode)
{
	procset_init(ps, prof, mode, true);
	ps->all = true;
	ps->self = getpid();
	scan(ps, now_ns(), true);
}

struct pyd_session *procset_root_session(const struct procset *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->pid == ps->root)
			return ps->v[i]->sess;
	return NULL;
}

/* ---- rounds ---- */

enum pyd_err procset_round(void *ctx, int64_t now, unsigned *nstacks)
{
	struct procset *ps = ctx;
	*nstacks = 0;
	if (ps->follow && now - ps->scanned_ns >= SCAN_NS)
		scan(ps, now, false);
	enum pyd_err worst = PYD_OK;
	bool pending = false;
	for (size_t i = ps->n; i-- > 0;) {
		struct sampled *e = ps->v[i];
		if (!e->sampling) {
			pending |= e->seen_ns != INT64_MAX;
			continue;
		}
		unsigned n = 0;
		enum pyd_err err = pyd_sample_at(e->sp, now, &n);
		*nstacks += n;
		if (err == PYD_E_EXITED)
			drop_entry(ps, i, true);
		else if (err == PYD_E_NOMEM)
			return err;
		else if (err && !worst)
			worst = err;
	}
	/* Every process of the machine: one may start at any time. */
	if (!procset_sampling(ps) && !pending && !ps->all)
		return PYD_E_EXITED;
	return worst;
}

uint64_t procset_reads(const struct procset *ps)
{
	uint64_t n = ps->reads_done;
	for (size_t i = 0; i < ps->n; i++)
		n += ps->v[i]->counted.reads;
	return n;
}

bool procset_thread_running(const struct procset *ps, uint32_t proc,
                            int64_t tid)
{
	for (size_t i = 0; i < ps->n; i++) {
		const struct sampled *e = ps->v[i];
		const struct pyd_memsrc *in = e->counted.layer.inner;
		enum pyd_thread_run run = PYD_RUN_UNKNOWN;
		if (e->sampling && e->index == proc && in->thread_run)
			in->thread_run(in->ctx, tid, &run);
		if (run == PYD_RUN_RUNNING)
			return true;
	}
	return false;
}

size_t procset_sampling(const struct procset *ps)
{
	size_t n = 0;
	for (size_t i = 0; i < ps->n; i++)
		n += ps->v[i]->sampling;
	return n;
}

void procset_close(struct procset *ps)
{
	while (ps->n)
		drop_entry(ps, ps->n - 1, false);
	free(ps->v);
	ps->v = NULL;
	ps->cap = 0;
}
