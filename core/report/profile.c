/*
 * Profile reports: the pstats-like table, collapsed stacks and the JSON
 * tree (docs/profile-formats.md).  The other formats live in files of
 * their own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pyd_profile.h"
#include "report.h"

/* Tasks without a name (3.7) are already called "<task 0x...>". */
const char *pyd_task_label(const char *name, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, strncmp(name, "<task ", 6) ? "<task %s>" : "%s",
		 name);
	return buf;
}

const char *pyd_prof_frame_label(const struct pyd_prof_frame *f, char *buf,
                                 size_t bufsz)
{
	const char *name = f->qualname ? f->qualname : f->function;
	if (f->kind == PYD_PF_TASK)
		pyd_task_label(name, buf, bufsz);
	else if (f->line > 0)
		snprintf(buf, bufsz, "%s (%s:%d)", name, f->file, f->line);
	else
		snprintf(buf, bufsz, "%s (%s)", name, f->file);
	return buf;
}

/*
 * Depth-first over the subtree under top (top itself excluded), without
 * recursion: stacks can be 100,000 frames deep.  enter() sees each node
 * on the way down, leave() on the way up.
 */
static void walk(const struct pyd_profile *p, uint32_t top,
                 void (*enter)(void *ctx, uint32_t node),
                 void (*leave)(void *ctx, uint32_t node), void *ctx)
{
	uint32_t n = p->nodes[top].first_child;
	while (n != PYD_PROF_NONE) {
		enter(ctx, n);
		if (p->nodes[n].first_child != PYD_PROF_NONE) {
			n = p->nodes[n].first_child;
			continue;
		}
		for (;;) {
			leave(ctx, n);
			if (p->nodes[n].next_sibling != PYD_PROF_NONE) {
				n = p->nodes[n].next_sibling;
				break;
			}
			n = p->nodes[n].parent;
			if (n == top) {
				n = PYD_PROF_NONE;
				break;
			}
		}
	}
}

static uint64_t total_samples(const struct pyd_profile *p)
{
	return p->nnodes ? p->nodes[0].total : 0;
}

/* ---- table ---- */

struct func_row {
	uint32_t frame; /* a frame of the function, for its name and file */
	uint64_t self, self_await, cum;
	unsigned onpath;
};

struct table_ctx {
	const struct pyd_profile *p;
	uint32_t *func_of; /* frame index -> row */
	struct func_row *rows;
};

/* Rows are per function: frames that differ only in their line share
 * one.  Interned strings compare by address. */
static size_t group_functions(const struct pyd_profile *p, uint32_t *func_of,
                              struct func_row *rows)
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
			rows[nrows++] = (struct func_row){.frame = (uint32_t)i};
		}
		func_of[i] = tab[j];
	}
	free(tab);
	return nrows;
}

static void table_enter(void *ctx, uint32_t n)
{
	struct table_ctx *c = ctx;
	const struct pyd_prof_node *node = &c->p->nodes[n];
	if (node->frame == PYD_PROF_NONE)
		return;
	struct func_row *r = &c->rows[c->func_of[node->frame]];
	r->self += node->self;
	r->self_await += node->self_await;
	/* Recursion: count a function once per sample. */
	if (r->onpath++ == 0)
		r->cum += node->total;
}

static void table_leave(void *ctx, uint32_t n)
{
	struct table_ctx *c = ctx;
	const struct pyd_prof_node *node = &c->p->nodes[n];
	if (node->frame != PYD_PROF_NONE)
		c->rows[c->func_of[node->frame]].onpath--;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct func_row *x = a, *y = b;
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

static void table_header(struct pyd_buf *b, const struct pyd_profile *p)
{
	const struct pyd_prof_meta *m = &p->meta;
	size_t nthreads = p->merged ? p->threads_merged : p->nthreads;
	pyd_buf_printf(b,
	               "Profile of process %d (Python %s), %s mode: %llu "
	               "samples in %.2f s, %zu thread%s%s\n",
	               m->pid, m->python_version ? m->python_version : "?",
	               pyd_sample_mode_name(m->mode),
	               (unsigned long long)total_samples(p), m->duration_s,
	               nthreads, nthreads == 1 ? "" : "s",
	               p->merged && nthreads > 1 ? " (merged)" : "");
	if (m->mode == PYD_SAMPLE_ASYNC)
		pyd_buf_printf(b,
		               "Tasks on CPU: %llu samples (%.1f%%), "
		               "awaiting: %llu samples (%.1f%%)\n",
		               (unsigned long long)m->cpu_samples,
		               pct(m->cpu_samples, total_samples(p)),
		               (unsigned long long)m->await_samples,
		               pct(m->await_samples, total_samples(p)));
	pyd_buf_printf(b, "\n%10s %7s %10s %10s %7s %10s%s  %s\n", "direct",
	               "direct%", "est.time", "cumul", "cumul%", "est.time",
	               m->mode == PYD_SAMPLE_ASYNC ? "   await%" : "",
	               "function (file)");
}

static void table_row(struct pyd_buf *b, const struct pyd_profile *p,
                      const struct func_row *r)
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
	if (p->meta.mode == PYD_SAMPLE_ASYNC)
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
		pyd_buf_printf(b,
		               "\nAwait sites (samples of tasks suspended "
		               "there):\n%10s %7s %10s  %s\n",
		               "samples", "%", "est.time", "await at");
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

void pyd_report_prof_table(struct pyd_buf *b, const struct pyd_profile *p,
                           size_t limit)
{
	struct table_ctx c = {.p = p};
	size_t nf = p->nframes ? p->nframes : 1;
	c.func_of = malloc(nf * sizeof *c.func_of);
	c.rows = malloc(nf * sizeof *c.rows);
	size_t nrows = c.func_of && c.rows
	                   ? group_functions(p, c.func_of, c.rows)
	                   : SIZE_MAX;
	if (nrows == SIZE_MAX) {
		b->failed = true;
		goto out;
	}
	walk(p, 0, table_enter, table_leave, &c);
	qsort(c.rows, nrows, sizeof *c.rows, cmp_rows);
	table_header(b, p);
	size_t shown = limit && limit < nrows ? limit : nrows;
	for (size_t i = 0; i < shown; i++)
		table_row(b, p, &c.rows[i]);
	if (shown < nrows)
		pyd_buf_printf(b,
		               "... %zu more functions (--limit 0 shows "
		               "all)\n",
		               nrows - shown);
	if (p->meta.mode == PYD_SAMPLE_ASYNC)
		await_sites(b, p, limit ? limit : SIZE_MAX);
out:
	free(c.func_of);
	free(c.rows);
}

/* ---- collapsed stacks ---- */

struct collapsed_ctx {
	const struct pyd_profile *p;
	struct pyd_buf *out;
	struct pyd_buf path; /* "a;b;c" of the current node */
	size_t *len;         /* path length before each depth's label */
	size_t depth, cap;
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

static void collapsed_enter(void *ctx, uint32_t n)
{
	struct collapsed_ctx *c = ctx;
	const struct pyd_prof_node *node = &c->p->nodes[n];
	if (c->depth == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		size_t *t = realloc(c->len, ncap * sizeof *t);
		if (!t) {
			c->out->failed = true;
			return;
		}
		c->len = t;
		c->cap = ncap;
	}
	c->len[c->depth++] = c->path.len;
	char label[1024];
	if (node->frame == PYD_PROF_NONE) {
		const struct pyd_prof_thread *t = NULL;
		for (size_t i = 0; i < c->p->nthreads; i++)
			if (c->p->threads[i].node == n)
				t = &c->p->threads[i];
		if (c->p->merged || !t)
			return;
		snprintf(label, sizeof label, "Thread %lld (%s)",
		         (long long)t->tid, t->name);
	} else {
		pyd_prof_frame_label(&c->p->frames[node->frame], label,
		                     sizeof label);
	}
	if (c->path.len)
		pyd_buf_put(&c->path, ";", 1);
	put_label(&c->path, label);
	if (node->self && node->frame != PYD_PROF_NONE) {
		pyd_buf_put(c->out, c->path.data, c->path.len);
		pyd_buf_printf(c->out, " %llu\n",
		               (unsigned long long)node->self);
	}
}

static void collapsed_leave(void *ctx, uint32_t n)
{
	struct collapsed_ctx *c = ctx;
	(void)n;
	if (c->depth)
		c->path.len = c->len[--c->depth];
}

void pyd_report_prof_collapsed(struct pyd_buf *b, const struct pyd_profile *p)
{
	struct collapsed_ctx c = {.p = p, .out = b};
	walk(p, 0, collapsed_enter, collapsed_leave, &c);
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
	    "\"await_samples\": %llu, \"truncated\": %s,\n",
	    pyd_sample_mode_name(m->mode), p->lines ? "true" : "false",
	    m->rate_hz, m->duration_s, m->interval_s,
	    (unsigned long long)m->start_unix_us, (unsigned long long)m->ticks,
	    (unsigned long long)m->samples, (unsigned long long)m->errors,
	    (unsigned long long)m->missed, (unsigned long long)m->reads,
	    (unsigned long long)m->cpu_samples,
	    (unsigned long long)m->await_samples,
	    p->truncated ? "true" : "false");
}

void pyd_report_prof_json(struct pyd_buf *b, const struct pyd_profile *p)
{
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
		               f->kind == PYD_PF_TASK ? "task" : "python");
	}
	pyd_buf_put(b, "],\n\"threads\": [", 15);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct pyd_prof_thread *t = &p->threads[i];
		pyd_buf_printf(b, "%s{\"tid\": %lld, \"name\": ", i ? ", " : "",
		               (long long)t->tid);
		pyd_buf_json_str(b, t->name);
		pyd_buf_printf(b, ", \"node\": %u}", t->node);
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

/* ---- choosing and writing a format ---- */

static const char *const format_names[] = {
	[PYD_FMT_TABLE] = "table",	   [PYD_FMT_COLLAPSED] = "collapsed",
	[PYD_FMT_FLAMEGRAPH] = "flamegraph", [PYD_FMT_SPEEDSCOPE] = "speedscope",
	[PYD_FMT_GECKO] = "gecko",	   [PYD_FMT_PPROF] = "pprof",
	[PYD_FMT_JSON] = "json",
};

enum pyd_prof_format pyd_prof_format_named(const char *name)
{
	for (int f = 0; f < PYD_FMT_UNKNOWN; f++)
		if (!strcmp(name, format_names[f]))
			return (enum pyd_prof_format)f;
	return PYD_FMT_UNKNOWN;
}

const char *pyd_prof_format_name(enum pyd_prof_format f)
{
	return (unsigned)f < PYD_FMT_UNKNOWN ? format_names[f] : "unknown";
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

enum pyd_prof_format pyd_prof_format_for_file(const char *path)
{
	/* Longest suffixes first: x.speedscope.json is not plain json. */
	static const struct {
		const char *ext;
		enum pyd_prof_format f;
	} by_ext[] = {
		{".speedscope.json", PYD_FMT_SPEEDSCOPE},
		{".gecko.json", PYD_FMT_GECKO},
		{".json", PYD_FMT_JSON},
		{".html", PYD_FMT_FLAMEGRAPH},
		{".htm", PYD_FMT_FLAMEGRAPH},
		{".pb.gz", PYD_FMT_PPROF},
		{".pprof", PYD_FMT_PPROF},
	};
	for (size_t i = 0; i < sizeof by_ext / sizeof *by_ext; i++)
		if (ends_with(path, by_ext[i].ext))
			return by_ext[i].f;
	return PYD_FMT_COLLAPSED;
}

static void write_format(struct pyd_buf *b, const struct pyd_profile *p,
			 enum pyd_prof_format f, size_t limit)
{
	switch (f) {
	case PYD_FMT_TABLE:
		pyd_report_prof_table(b, p, limit);
		break;
	case PYD_FMT_COLLAPSED:
		pyd_report_prof_collapsed(b, p);
		break;
	case PYD_FMT_FLAMEGRAPH:
		pyd_report_prof_flamegraph(b, p);
		break;
	case PYD_FMT_SPEEDSCOPE:
		pyd_report_prof_speedscope(b, p);
		break;
	case PYD_FMT_GECKO:
		pyd_report_prof_gecko(b, p);
		break;
	case PYD_FMT_PPROF:
		pyd_report_prof_pprof(b, p);
		break;
	case PYD_FMT_JSON:
	case PYD_FMT_UNKNOWN:
		pyd_report_prof_json(b, p);
		break;
	}
}

enum pyd_err pyd_report_prof(struct pyd_buf *b, const struct pyd_profile *p,
			     enum pyd_prof_format f, bool per_thread,
			     size_t limit)
{
	per_thread |= f == PYD_FMT_PPROF || f == PYD_FMT_SPEEDSCOPE ||
		      f == PYD_FMT_GECKO;
	struct pyd_profile *merged = per_thread ? NULL : pyd_profile_merged(p);
	if (!per_thread && !merged)
		return PYD_E_NOMEM;
	write_format(b, merged ? merged : p, f, limit);
	pyd_profile_free(merged);
	return b->failed ? PYD_E_NOMEM : PYD_OK;
}
