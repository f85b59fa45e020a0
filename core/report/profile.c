/*
 * Profile reports: the pstats-like table, collapsed stacks and the JSON
 * tree (docs/profile-formats.md).  The other formats live in files of
 * their own; formats.c lists them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "../grow.h"

const char *const pyd_prof_kind_names[PYD_PF_GC + 1] = {
    [PYD_PF_PYTHON] = "python",
    [PYD_PF_TASK] = "task",
    [PYD_PF_ELIDED] = "truncated",
    [PYD_PF_GC] = "gc",
};

static uint64_t total_samples(const struct pyd_profile *p)
{
	return p->nnodes ? p->nodes[0].total : 0;
}

/* ---- table ---- */

struct table_ctx {
	const struct pyd_profile *p;
	const uint64_t *self, *total; /* per node */
	uint32_t *func_of;            /* frame index -> row */
	struct pyd_prof_func *rows;
	unsigned *onpath;             /* per row: on the current path */
};

/* Rows are per function: frames that differ only in their line share
 * one.  Interned strings compare by address. */
static size_t group_functions(const struct pyd_profile *p, uint32_t *func_of,
                              struct pyd_prof_func *rows)
{
	size_t cap = 16, nrows = 0;
	while (cap < p->nframes * 2)
		cap *= 2;
	uint32_t *tab = malloc(cap * sizeof *tab);
	if (!tab)
		return SIZE_MAX;
	memset(tab, 0xff, cap * sizeof *tab);
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		uintptr_t h =
		    ((uintptr_t)f->function * 31 + (uintptr_t)f->qualname) *
		        31 +
		    (uintptr_t)f->file;
		size_t j = (h ^ (h >> 17)) & (cap - 1);
		for (; tab[j] != PYD_PROF_NONE; j = (j + 1) & (cap - 1)) {
			const struct pyd_prof_frame *g =
			    &p->frames[rows[tab[j]].frame];
			if (g->function == f->function &&
			    g->qualname == f->qualname && g->file == f->file &&
			    g->kind == f->kind)
				break;
		}
		if (tab[j] == PYD_PROF_NONE) {
			tab[j] = (uint32_t)nrows;
			rows[nrows++] = (struct pyd_prof_func){.frame = (uint32_t)i};
		}
		func_of[i] = tab[j];
	}
	free(tab);
	return nrows;
}

/* A function's cumulative count takes each sample once, however often
 * it recurses: rows on the current path have onpath > 0. */
static void table_enter(struct table_ctx *c, uint32_t row, uint32_t n)
{
	struct pyd_prof_func *r = &c->rows[row];
	r->self += c->self ? c->self[n] : c->p->nodes[n].self;
	if (!c->self)
		r->self_await += c->p->nodes[n].self_await;
	if (c->onpath[row]++ == 0)
		r->cum += c->total ? c->total[n] : c->p->nodes[n].total;
}

static bool table_count(struct table_ctx *c)
{
	const struct pyd_profile *p = c->p;
	/* The row of each node on the path (PYD_PROF_NONE: no frame). */
	uint32_t *path = NULL;
	size_t len = 0, cap = 0;
	struct pyd_prof_walk w;
	uint32_t n;
	for (pyd_prof_walk_start(&w, p, 0); pyd_prof_walk_next(&w, &n);) {
		for (; len >= w.depth; len--)
			if (path[len - 1] != PYD_PROF_NONE)
				c->onpath[path[len - 1]]--;
		if (!pyd_grow((void **)&path, &cap, len + 1, sizeof *path)) {
			free(path);
			return false;
		}
		uint32_t f = p->nodes[n].frame;
		path[len++] = f == PYD_PROF_NONE ? PYD_PROF_NONE : c->func_of[f];
		if (f != PYD_PROF_NONE)
			table_enter(c, path[len - 1], n);
	}
	free(path);
	return true;
}

/* Totals of the counts self: a child always comes after its parent. */
static uint64_t *totals_of(const struct pyd_profile *p, const uint64_t *self)
{
	uint64_t *t = malloc((p->nnodes ? p->nnodes : 1) * sizeof *t);
	if (!t)
		return NULL;
	if (p->nnodes)
		memcpy(t, self, p->nnodes * sizeof *t);
	for (size_t i = p->nnodes; i-- > 1;)
		t[p->nodes[i].parent] += t[i];
	return t;
}

size_t pyd_prof_functions(const struct pyd_profile *p, const uint64_t *self,
                          struct pyd_prof_func **rows)
{
	size_t nf = p->nframes ? p->nframes : 1, nrows = SIZE_MAX;
	struct table_ctx c = {.p = p, .self = self};
	c.func_of = malloc(nf * sizeof *c.func_of);
	c.rows = malloc(nf * sizeof *c.rows);
	c.onpath = calloc(nf, sizeof *c.onpath);
	c.total = self ? totals_of(p, self) : NULL;
	if (c.func_of && c.rows && c.onpath && (!self || c.total))
		nrows = group_functions(p, c.func_of, c.rows);
	if (nrows != SIZE_MAX && !table_count(&c))
		nrows = SIZE_MAX;
	free(c.func_of);
	free(c.onpath);
	free((void *)c.total);
	if (nrows == SIZE_MAX) {
		free(c.rows);
		c.rows = NULL;
	}
	*rows = c.rows;
	return nrows;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct pyd_prof_func *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->cum != y->cum)
		return x->cum < y->cum ? 1 : -1;
	return (x->frame > y->frame) - (x->frame < y->frame);
}

static void put_time(struct pyd_buf *b, double s)
{
	if (s >= 100)
		pyd_buf_printf(b, "%9.1fs", s);
	else if (s >= 1)
		pyd_buf_printf(b, "%9.3fs", s);
	else
		pyd_buf_printf(b, "%8.2fms", s * 1e3);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Samples of tasks in await: the rest of an async profile ran. */
static uint64_t await_samples(const struct pyd_profile *p)
{
	uint64_t n = 0;
	for (size_t i = 0; i < p->nnodes; i++)
		n += p->nodes[i].self_await;
	return n;
}

/* Which process a by-process table is of (profile of one process). */
static void process_line(struct pyd_buf *b, const struct pyd_profile *p)
{
	const struct pyd_prof_process *pr = NULL;
	for (size_t i = 0; i < p->nprocesses; i++)
		if (p->processes[i].pid == p->meta.pid)
			pr = &p->processes[i];
	char cmd[4 * sizeof pr->cmdline + 1];
	if (!pr)
		return;
	pyd_one_line(pr->cmdline[0] ? pr->cmdline : "?", cmd, sizeof cmd);
	pyd_buf_printf(b, "Command: %s\nParent: %d%s\n", cmd, pr->ppid,
	               pr->exited ? "; exited while sampled" : "");
}

/* The idle threads the table leaves out (frontend's default, --idle
 * keeps them): said, so that a process whose threads all blocked -- a
 * hung one, what wall mode is for -- does not look unsampled. */
static void idle_line(struct pyd_buf *b, const struct pyd_profile *p)
{
	size_t n = 0;
	uint64_t samples = 0;
	for (size_t i = 0; i < p->nprocesses; i++)
		if (!p->by_process || p->processes[i].pid == p->meta.pid) {
			n += p->processes[i].idle_threads;
			samples += p->processes[i].idle_samples;
		}
	if (n)
		pyd_buf_printf(b,
		               "Left out: %zu idle thread%s (never seen on a "
		               "CPU), %llu samples; --idle shows %s\n",
		               n, n == 1 ? "" : "s",
		               (unsigned long long)samples,
		               n == 1 ? "it" : "them");
}

static void table_header(struct pyd_buf *b, const struct pyd_profile *p)
{
	const struct pyd_prof_meta *m = &p->meta;
	size_t nthreads = p->merged ? p->threads_merged : p->nthreads;
	uint64_t all = total_samples(p), awaiting = await_samples(p);
	pyd_buf_printf(b,
	               "Profile of process %d (Python %s), %s mode: %llu "
	               "samples in %.2f s, %zu thread%s%s\n",
	               m->pid, m->python_version ? m->python_version : "?",
	               pyd_sample_mode_name(m->mode), (unsigned long long)all,
	               m->duration_s, nthreads, nthreads == 1 ? "" : "s",
	               p->merged && nthreads > 1 ? " (merged)" : "");
	if (p->by_process)
		process_line(b, p);
	idle_line(b, p);
	const struct pyd_sample_mode_row *mode = pyd_sample_mode(m->mode);
	if (mode->unit)
		pyd_buf_printf(b,
		               "%s on CPU: %llu samples (%.1f%%), "
		               "%s: %llu samples (%.1f%%)\n",
		               mode->running, (unsigned long long)(all - awaiting),
		               pct(all - awaiting, all), mode->waiting,
		               (unsigned long long)awaiting, pct(awaiting, all));
	pyd_buf_printf(b, "\n%10s %7s %10s %10s %7s %10s%s  %s\n", "direct",
	               "direct%", "est.time", "cumul", "cumul%", "est.time",
	               mode->unit ? "   await%" : "",
	               "function (file)");
}

static void table_row(struct pyd_buf *b, const struct pyd_profile *p,
                      const struct pyd_prof_func *r)
{
	uint64_t all = total_samples(p);
	double iv = p->meta.interval_s;
	char label[1024];
	struct pyd_prof_frame f = p->frames[r->frame];
	f.line = 0;
	pyd_buf_printf(b, "%10llu %6.1f%% ", (unsigned long long)r->self,
	               pct(r->self, all));
	put_time(b, (double)r->self * iv);
	pyd_buf_printf(b, " %10llu %6.1f%% ", (unsigned long long)r->cum,
	               pct(r->cum, all));
	put_time(b, (double)r->cum * iv);
	if (pyd_sample_mode(p->meta.mode)->unit)
		pyd_buf_printf(b, " %7.1f%%", pct(r->self_await, r->self));
	pyd_buf_printf(b, "  %s\n",
	               pyd_prof_frame_label(&f, label, sizeof label));
}

/* Aergia's view: where tasks sit in await, by line. */
static void await_sites(struct pyd_buf *b, const struct pyd_profile *p,
                        size_t limit)
{
	uint64_t *by_frame =
	    calloc(p->nframes ? p->nframes : 1, sizeof *by_frame);
	uint32_t *order = malloc((p->nframes ? p->nframes : 1) * sizeof *order);
	size_t n = 0;
	if (!by_frame || !order)
		goto out;
	for (size_t i = 1; i < p->nnodes; i++)
		if (p->nodes[i].frame != PYD_PROF_NONE)
			by_frame[p->nodes[i].frame] += p->nodes[i].self_await;
	for (size_t i = 0; i < p->nframes; i++)
		if (by_frame[i])
			order[n++] = (uint32_t)i;
	/* A selection sort of the few we print: n is small in practice. */
	for (size_t i = 0; i < n && i < limit; i++) {
		size_t best = i;
		for (size_t j = i + 1; j < n; j++)
			if (by_frame[order[j]] > by_frame[order[best]])
				best = j;
		uint32_t t = order[i];
		order[i] = order[best];
		order[best] = t;
	}
	if (n)
		pyd_buf_printf(b, "\n%s:\n%10s %7s %10s  %s\n",
		               pyd_sample_mode(p->meta.mode)->sites_title,
		               "samples", "%", "est.time",
		               pyd_sample_mode(p->meta.mode)->sites_column);
	for (size_t i = 0; i < n && i < limit; i++) {
		char label[1024];
		uint64_t s = by_frame[order[i]];
		pyd_buf_printf(b, "%10llu %6.1f%% ", (unsigned long long)s,
		               pct(s, total_samples(p)));
		put_time(b, (double)s * p->meta.interval_s);
		pyd_buf_printf(b, "  %s\n",
		               pyd_prof_frame_label(&p->frames[order[i]], label,
		                                    sizeof label));
	}
out:
	free(by_frame);
	free(order);
}

static void table_of(struct pyd_buf *b, const struct pyd_profile *p,
                     size_t limit)
{
	struct pyd_prof_func *rows;
	size_t nrows = pyd_prof_functions(p, NULL, &rows);
	if (nrows == SIZE_MAX) {
		b->failed = true;
		return;
	}
	if (nrows) /* qsort's array may not be NULL, even empty */
		qsort(rows, nrows, sizeof *rows, cmp_rows);
	/* Functions of other processes' trees (one process's table) last. */
	while (nrows && !rows[nrows - 1].cum)
		nrows--;
	table_header(b, p);
	size_t shown = limit && limit < nrows ? limit : nrows;
	for (size_t i = 0; i < shown; i++)
		table_row(b, p, &rows[i]);
	if (shown < nrows)
		pyd_buf_printf(b,
		               "... %zu more functions (--limit 0 shows "
		               "all)\n",
		               nrows - shown);
	if (pyd_sample_mode(p->meta.mode)->unit)
		await_sites(b, p, limit ? limit : SIZE_MAX);
	free(rows);
}

/* With processes kept apart, one table each. */
void pyd_report_prof_table(struct pyd_buf *b, const struct pyd_profile *p,
                           size_t limit)
{
	if (!p->by_process) {
		table_of(b, p, limit);
		return;
	}
	for (uint32_t i = 0; i < p->nprocesses && !b->failed; i++) {
		struct pyd_profile *one = pyd_profile_view(p, i, false, false);
		if (!one) {
			b->failed = true;
			return;
		}
		if (i)
			pyd_buf_put(b, "\n", 1);
		table_of(b, one, limit);
		pyd_profile_free(one);
	}
}

/* ---- collapsed stacks ---- */

struct collapsed_ctx {
	const struct pyd_profile *p;
	struct pyd_buf *out;
	struct pyd_buf path; /* "a;b;c" of the current node */
	size_t *len;         /* path length after each depth's label */
	size_t cap;
};

/* ';' separates frames and a newline ends the line: neither may appear
 * in a label. */
static void put_label(struct pyd_buf *b, const char *s)
{
	size_t start = b->len;
	pyd_buf_put(b, s, strlen(s));
	if (b->failed)
		return;
	for (size_t i = start; i < b->len; i++)
		if (b->data[i] == ';' || b->data[i] == '\n')
			b->data[i] = ':';
}

/* A frame's label after a ';' unless first in the path. */
static void put_step(struct pyd_buf *path, const char *label)
{
	if (path->len)
		pyd_buf_put(path, ";", 1);
	put_label(path, label);
}

/* A thread's own node is labelled only in a per-thread profile, and is
 * preceded by its process's when processes are kept apart. */
static void put_node(struct pyd_buf *path, const struct pyd_profile *p,
                     uint32_t n)
{
	const struct pyd_prof_node *node = &p->nodes[n];
	char label[1024];
	if (node->frame != PYD_PROF_NONE) {
		put_step(path, pyd_prof_frame_label(&p->frames[node->frame],
		                                    label, sizeof label));
		return;
	}
	const struct pyd_prof_thread *t = pyd_prof_thread_of(p, n);
	if (!t)
		return;
	if (p->by_process)
		put_step(path, pyd_prof_process_label(p, t->process, label,
		                                      sizeof label));
	if (p->merged)
		return;
	snprintf(label, sizeof label, "Thread %lld (%s)", (long long)t->tid,
	         t->name);
	put_step(path, label);
}

static void collapsed_node(struct collapsed_ctx *c, uint32_t n, size_t depth)
{
	const struct pyd_prof_node *node = &c->p->nodes[n];
	if (!pyd_grow((void **)&c->len, &c->cap, depth, sizeof *c->len)) {
		c->out->failed = true;
		return;
	}
	/* Back to the parent's path, then this node's label. */
	c->path.len = depth > 1 ? c->len[depth - 2] : 0;
	put_node(&c->path, c->p, n);
	c->len[depth - 1] = c->path.len;
	if (node->self && node->frame != PYD_PROF_NONE) {
		pyd_buf_put(c->out, c->path.data, c->path.len);
		pyd_buf_printf(c->out, " %llu\n",
		               (unsigned long long)node->self);
	}
}

void pyd_report_prof_collapsed(struct pyd_buf *b, const struct pyd_profile *p,
                               size_t limit)
{
	struct collapsed_ctx c = {.p = p, .out = b};
	struct pyd_prof_walk w;
	uint32_t n;
	(void)limit;
	for (pyd_prof_walk_start(&w, p, 0); pyd_prof_walk_next(&w, &n);)
		collapsed_node(&c, n, w.depth);
	if (c.path.failed)
		b->failed = true;
	pyd_buf_free(&c.path);
	free(c.len);
}

/* ---- JSON ---- */

static void json_meta(struct pyd_buf *b, const struct pyd_profile *p)
{
	const struct pyd_prof_meta *m = &p->meta;
	pyd_buf_printf(b,
	               "{\"format\": \"pystack-dump-profile\", \"version\": 1, "
	               "\"pid\": %d, \"python_version\": ",
	               m->pid);
	pyd_buf_json_str(b, m->python_version);
	pyd_buf_printf(
	    b,
	    ", \"mode\": \"%s\", \"lines\": %s, \"rate_hz\": %.6g, "
	    "\"duration_s\": %.6f, \"interval_s\": %.9f, "
	    "\"start_unix_us\": %llu, \"ticks\": %llu, "
	    "\"samples\": %llu, \"errors\": %llu, \"missed\": %llu, "
	    "\"reads\": %llu, \"cpu_samples\": %llu, "
	    "\"await_samples\": %llu, \"gil_looks\": %llu, "
	    "\"gil_contended\": %llu, \"gil_waiters\": %llu, "
	    "\"gil_waiters_max\": %llu, \"truncated\": %s,\n",
	    pyd_sample_mode_name(m->mode), p->lines ? "true" : "false",
	    m->rate_hz, m->duration_s, m->interval_s,
	    (unsigned long long)m->start_unix_us, (unsigned long long)m->ticks,
	    (unsigned long long)m->samples, (unsigned long long)m->errors,
	    (unsigned long long)m->missed, (unsigned long long)m->reads,
	    (unsigned long long)m->cpu_samples,
	    (unsigned long long)m->await_samples,
	    (unsigned long long)m->gil_looks,
	    (unsigned long long)m->gil_contended,
	    (unsigned long long)m->gil_waiters,
	    (unsigned long long)m->gil_waiters_max,
	    p->truncated ? "true" : "false");
}

void pyd_report_prof_json(struct pyd_buf *b, const struct pyd_profile *p,
                          size_t limit)
{
	(void)limit;
	json_meta(b, p);
	pyd_buf_put(b, "\"frames\": [", 11);
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		pyd_buf_put(b,
		            i ? ",\n  {\"function\": " : "\n  {\"function\": ",
		            i ? 16 : 15);
		pyd_buf_json_str(b, f->function);
		pyd_buf_put(b, ", \"qualname\": ", 14);
		pyd_buf_json_str(b, f->qualname);
		pyd_buf_put(b, ", \"file\": ", 10);
		pyd_buf_json_str(b, f->file);
		pyd_buf_printf(b, ", \"line\": %d, \"kind\": \"%s\"}", f->line,
		               pyd_prof_kind_names[f->kind]);
	}
	pyd_buf_put(b, "],\n\"threads\": [", 15);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct pyd_prof_thread *t = &p->threads[i];
		pyd_buf_printf(b, "%s{\"tid\": %lld, \"name\": ", i ? ", " : "",
		               (long long)t->tid);
		pyd_buf_json_str(b, t->name);
		pyd_buf_printf(b, ", \"pid\": %d, \"node\": %u}",
		               p->processes[t->process].pid, t->node);
	}
	pyd_buf_put(b, "],\n\"processes\": [", 17);
	for (size_t i = 0; i < p->nprocesses; i++) {
		const struct pyd_prof_process *pr = &p->processes[i];
		pyd_buf_printf(b, "%s{\"pid\": %d, \"ppid\": %d, \"cmdline\": ",
		               i ? ", " : "", pr->pid, pr->ppid);
		pyd_buf_json_str(b, pr->cmdline);
		pyd_buf_put(b, ", \"python_version\": ", 20);
		pyd_buf_json_str(b, pr->python_version);
		pyd_buf_printf(b, ", \"exited\": %s}",
		               pr->exited ? "true" : "false");
	}
	pyd_buf_put(b, "],\n\"nodes\": [", 13);
	for (size_t i = 0; i < p->nnodes; i++) {
		const struct pyd_prof_node *n = &p->nodes[i];
		pyd_buf_printf(
		    b, "%s{\"parent\": %lld, \"frame\": ", i ? ",\n  " : "\n  ",
		    n->parent == PYD_PROF_NONE ? -1LL : (long long)n->parent);
		if (n->frame == PYD_PROF_NONE)
			pyd_buf_put(b, "null", 4);
		else
			pyd_buf_printf(b, "%u", n->frame);
		pyd_buf_printf(b,
		               ", \"self\": %llu, \"self_await\": %llu, "
		               "\"total\": %llu}",
		               (unsigned long long)n->self,
		               (unsigned long long)n->self_await,
		               (unsigned long long)n->total);
	}
	pyd_buf_put(b, "\n]}\n", 4);
}
