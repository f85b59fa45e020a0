/*
 * The Firefox Profiler's processed ("preprocessed") Gecko profile, the
 * version CPython's own sampling profiler writes (format 32, processed
 * 57), so profiler.firefox.com loads it without upgrading much.
 *
 * One Gecko thread per profile thread.  Functions are (name, file);
 * frames are the profile's interned frames (a function at a line); the
 * stack table is the call tree itself, one stack per node.  The profile
 * is aggregated, so each distinct stack is one sample whose "weight" is
 * its count (weightType "samples"); the samples' times are laid out
 * back to back in tree order, one interval per sample, which makes the
 * timeline proportional but not chronological.  In async mode a stack's
 * samples spent awaiting go to a twin stack whose leaf frame is in
 * category "Awaiting" (in this version categories belong to frames), so
 * the category graph tells running from waiting while the call tree,
 * which goes by function, is unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "report.h"


enum category { CAT_OTHER, CAT_PYTHON, CAT_TASK, CAT_AWAIT };

/* One thread's tables, indices into the global frame and function ids. */
struct gk {
	const struct pyd_profile *p;
	uint32_t *func_of;   /* per profile frame: its function */
	uint32_t nfuncs;     /* function k: strings 2k (name), 2k+1 (file) */
	uint32_t *frame_rep; /* per function: a frame naming it */
	/* Local indices, keyed by frame f (f), its awaiting twin (nf + f)
	 * and function k (2 nf + k); valid where stamp is the thread's. */
	uint32_t *local, *stamp;
	uint32_t *frames;   /* local frame -> profile frame */
	uint8_t *frame_cat; /* local frame -> category */
	uint32_t *funcs;    /* local function -> function */
	uint32_t nlframes, nlfuncs;
	/* The stack table; the awaiting twins come after the tree's. */
	uint32_t *st_frame, *st_prefix, *st_node;
	uint32_t nstacks;
	uint32_t *stack_of; /* per node: its stack */
};

static const char *frame_name(const struct pyd_prof_frame *f, char *buf,
                              size_t bufsz)
{
	if (f->kind == PYD_PF_TASK)
		return pyd_prof_frame_label(f, buf, bufsz);
	if (f->qualname)
		return f->qualname;
	return f->function ? f->function : "?";
}

static int strcmp_null(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

struct func_key {
	const char *name, *file; /* file NULL: a task, named by function */
	uint32_t frame;
};

static int cmp_func(const void *x, const void *y)
{
	const struct func_key *a = x, *b = y;
	int c = strcmp_null(a->name, b->name);
	return c ? c : strcmp_null(a->file, b->file);
}

/* Frames that differ only by line are one function. */
static bool group_functions(struct gk *g)
{
	const struct pyd_profile *p = g->p;
	struct func_key *keys = malloc((p->nframes + 1) * sizeof *keys);

	if (!keys)
		return false;
	for (uint32_t i = 0; i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		keys[i] = (struct func_key){
		    f->kind != PYD_PF_TASK && f->qualname ? f->qualname
		                                          : f->function,
		    f->kind == PYD_PF_TASK ? NULL : f->file, i};
	}
	qsort(keys, p->nframes, sizeof *keys, cmp_func);
	g->nfuncs = 0;
	for (uint32_t i = 0; i < p->nframes; i++) {
		if (!i || cmp_func(&keys[i - 1], &keys[i]))
			g->frame_rep[g->nfuncs++] = keys[i].frame;
		g->func_of[keys[i].frame] = g->nfuncs - 1;
	}
	free(keys);
	return true;
}

/* The thread's local index of frame f shown in category cat. */
static uint32_t local_frame(struct gk *g, uint32_t ti, uint32_t f,
                            enum category cat)
{
	uint32_t nf = (uint32_t)g->p->nframes;
	uint32_t key = cat == CAT_AWAIT ? nf + f : f;
	uint32_t fkey = 2 * nf + g->func_of[f];

	if (g->stamp[key] != ti) {
		g->stamp[key] = ti;
		g->local[key] = g->nlframes;
		g->frames[g->nlframes] = f;
		g->frame_cat[g->nlframes++] = (uint8_t)cat;
	}
	if (g->stamp[fkey] != ti) {
		g->stamp[fkey] = ti;
		g->local[fkey] = g->nlfuncs;
		g->funcs[g->nlfuncs++] = g->func_of[f];
	}
	return g->local[key];
}

static uint32_t add_stack(struct gk *g, uint32_t node, uint32_t frame,
                          uint32_t prefix)
{
	g->st_node[g->nstacks] = node;
	g->st_frame[g->nstacks] = frame;
	g->st_prefix[g->nstacks] = prefix;
	return g->nstacks++;
}

/* Local tables of thread ti (1-based), walking its tree depth first. */
static void build_thread(struct gk *g, uint32_t ti, uint32_t top)
{
	const struct pyd_profile *p = g->p;
	struct pyd_prof_walk w;
	uint32_t n;

	g->nlframes = g->nlfuncs = g->nstacks = 0;
	for (pyd_prof_walk_start(&w, p, top); pyd_prof_walk_next(&w, &n);) {
		const struct pyd_prof_node *node = &p->nodes[n];
		uint32_t f = node->frame;
		enum category cat =
		    p->frames[f].kind == PYD_PF_TASK ? CAT_TASK : CAT_PYTHON;
		uint32_t lf = local_frame(g, ti, f, cat);
		uint32_t prefix = node->parent == top
		                      ? PYD_PROF_NONE
		                      : g->stack_of[node->parent];
		g->stack_of[n] = add_stack(g, n, lf, prefix);
	}
}

static void put_index(struct pyd_buf *b, uint32_t v, bool first)
{
	if (!first)
		PUT(b, ",");
	if (v == PYD_PROF_NONE)
		PUT(b, "null");
	else
		pyd_buf_printf(b, "%u", v);
}

/* "name": [v, v, ...] of n identical values. */
static void put_repeat(struct pyd_buf *b, const char *name, const char *v,
                       uint32_t n)
{
	pyd_buf_printf(b, "\"%s\": [", name);
	for (uint32_t i = 0; i < n; i++)
		pyd_buf_printf(b, i ? ",%s" : "%s", v);
	PUT(b, "], ");
}

static void stack_table(struct pyd_buf *b, const struct gk *g)
{
	PUT(b, "\"stackTable\": {\"frame\": [");
	for (uint32_t i = 0; i < g->nstacks; i++)
		put_index(b, g->st_frame[i], !i);
	PUT(b, "], \"prefix\": [");
	for (uint32_t i = 0; i < g->nstacks; i++)
		put_index(b, g->st_prefix[i], !i);
	pyd_buf_printf(b, "], \"length\": %u},\n", g->nstacks);
}

static void frame_table(struct pyd_buf *b, const struct gk *g)
{
	const struct pyd_profile *p = g->p;
	uint32_t n = g->nlframes;

	PUT(b, "\"frameTable\": {");
	put_repeat(b, "address", "-1", n);
	PUT(b, "\"category\": [");
	for (uint32_t i = 0; i < n; i++)
		put_index(b, g->frame_cat[i], !i);
	PUT(b, "], ");
	put_repeat(b, "subcategory", "0", n);
	PUT(b, "\"func\": [");
	for (uint32_t i = 0; i < n; i++)
		put_index(
		    b, g->local[2 * p->nframes + g->func_of[g->frames[i]]], !i);
	PUT(b, "], ");
	put_repeat(b, "innerWindowID", "null", n);
	PUT(b, "\"line\": [");
	for (uint32_t i = 0; i < n; i++) {
		int line = p->frames[g->frames[i]].line;
		put_index(b, line > 0 ? (uint32_t)line : PYD_PROF_NONE, !i);
	}
	PUT(b, "], ");
	put_repeat(b, "column", "null", n);
	put_repeat(b, "inlineDepth", "0", n);
	put_repeat(b, "nativeSymbol", "null", n);
	pyd_buf_printf(b, "\"length\": %u},\n", n);
}

static void func_table(struct pyd_buf *b, const struct gk *g)
{
	const struct pyd_profile *p = g->p;
	uint32_t n = g->nlfuncs;

	PUT(b, "\"funcTable\": {\"name\": [");
	for (uint32_t i = 0; i < n; i++)
		put_index(b, 2 * g->funcs[i], !i);
	PUT(b, "], ");
	put_repeat(b, "isJS", "true", n);
	put_repeat(b, "relevantForJS", "false", n);
	put_repeat(b, "resource", "-1", n);
	PUT(b, "\"fileName\": [");
	for (uint32_t i = 0; i < n; i++) {
		const struct pyd_prof_frame *f =
		    &p->frames[g->frame_rep[g->funcs[i]]];
		put_index(b, f->file ? 2 * g->funcs[i] + 1 : PYD_PROF_NONE, !i);
	}
	PUT(b, "], ");
	put_repeat(b, "lineNumber", "null", n);
	put_repeat(b, "columnNumber", "null", n);
	pyd_buf_printf(b, "\"length\": %u},\n", n);
}

/* The samples table's columns, built before the stack and frame tables
 * because they add the awaiting twins to them. */
struct sample_cols {
	struct pyd_buf stack, time, weight;
	uint32_t n;
};

static void add_sample(struct sample_cols *c, uint32_t stack, double t,
                       uint64_t w)
{
	const char *sep = c->n++ ? "," : "";

	if (stack == PYD_PROF_NONE)
		pyd_buf_printf(&c->stack, "%snull", sep);
	else
		pyd_buf_printf(&c->stack, "%s%u", sep, stack);
	pyd_buf_printf(&c->time, "%s%.6f", sep, t);
	pyd_buf_printf(&c->weight, "%s%llu", sep, (unsigned long long)w);
}

/* One sample per stack with samples, weighted by their count, the awaiting
 * part of them on the node's twin. */
static void collect_samples(struct gk *g, uint32_t ti, uint32_t top,
                            double interval_ms, struct sample_cols *c)
{
	const struct pyd_profile *p = g->p;
	uint32_t ntree = g->nstacks;
	uint64_t at = p->nodes[top].self;

	/* The thread's own samples, without a Python frame: no stack. */
	if (at)
		add_sample(c, PYD_PROF_NONE, 0, at);

	for (uint32_t st = 0; st < ntree; st++) {
		uint32_t n = g->st_node[st];
		const struct pyd_prof_node *node = &p->nodes[n];
		uint64_t run = node->self - node->self_await;
		if (run) {
			add_sample(c, st, (double)at * interval_ms, run);
			at += run;
		}
		if (node->self_await) {
			uint32_t lf =
			    local_frame(g, ti, node->frame, CAT_AWAIT);
			uint32_t twin = add_stack(g, n, lf, g->st_prefix[st]);
			add_sample(c, twin, (double)at * interval_ms,
			           node->self_await);
			at += node->self_await;
		}
	}
}

static void put_buf(struct pyd_buf *b, struct pyd_buf *col)
{
	if (col->failed)
		b->failed = true;
	else if (col->len)
		pyd_buf_put(b, col->data, col->len);
	pyd_buf_free(col);
}

static void samples_table(struct pyd_buf *b, struct sample_cols *c)
{
	PUT(b, "\"samples\": {\"stack\": [");
	put_buf(b, &c->stack);
	PUT(b, "], \"time\": [");
	put_buf(b, &c->time);
	PUT(b, "], \"weight\": [");
	put_buf(b, &c->weight);
	pyd_buf_printf(b, "], \"weightType\": \"samples\", \"length\": %u},\n",
	               c->n);
}

static void thread_json(struct pyd_buf *b, struct gk *g, uint32_t ti,
                        bool main_thread, double interval_ms)
{
	const struct pyd_prof_thread *t = &g->p->threads[ti];
	struct sample_cols cols = {0};
	char name[96];

	build_thread(g, ti + 1, t->node);
	collect_samples(g, ti + 1, t->node, interval_ms, &cols);
	if (t->name[0])
		snprintf(name, sizeof name, "%s", t->name);
	else
		snprintf(name, sizeof name, "Thread %lld", (long long)t->tid);
	/* The profiler groups threads into tracks by pid. */
	int pid = g->p->processes[t->process].pid;
	char proc[384];
	if (g->p->by_process)
		pyd_prof_process_label(g->p, t->process, proc, sizeof proc);
	else
		snprintf(proc, sizeof proc, "Python %d", pid);
	PUT(b, "{\"name\": ");
	pyd_buf_json_str(b, name);
	pyd_buf_printf(b,
	               ", \"isMainThread\": %s, \"processStartupTime\": 0, "
	               "\"processShutdownTime\": null, \"registerTime\": 0, "
	               "\"unregisterTime\": null, \"pausedRanges\": [], "
	               "\"pid\": \"%d\", \"tid\": %lld, "
	               "\"processType\": \"default\", \"processName\": ",
	               main_thread ? "true" : "false", pid, (long long)t->tid);
	pyd_buf_json_str(b, proc);
	PUT(b, ",\n");
	samples_table(b, &cols);
	stack_table(b, g);
	frame_table(b, g);
	func_table(b, g);
	PUT(b, "\"resourceTable\": {\"lib\": [], \"name\": [], \"host\": [], "
	       "\"type\": [], \"length\": 0},\n"
	       "\"nativeSymbols\": {\"libIndex\": [], \"address\": [], "
	       "\"name\": [], \"functionSize\": [], \"length\": 0},\n"
	       "\"markers\": {\"data\": [], \"name\": [], \"startTime\": [], "
	       "\"endTime\": [], \"phase\": [], \"category\": [], "
	       "\"length\": 0}}");
}

/* Gecko has one main thread per process: CPython's, else the busiest. */
static bool is_main_thread(const struct pyd_profile *p, size_t ti)
{
	const struct pyd_prof_thread *t = &p->threads[ti];
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < p->nthreads; i++) {
		const struct pyd_prof_thread *u = &p->threads[i];
		if (u->process != t->process)
			continue;
		if (!strcmp(u->name, "MainThread"))
			return i == ti;
		if (best == SIZE_MAX || p->nodes[u->node].total >
		                            p->nodes[p->threads[best].node].total)
			best = i;
	}
	return best == ti;
}

static void meta_json(struct pyd_buf *b, const struct pyd_profile *p,
                      double interval_ms)
{
	pyd_buf_printf(b,
	               "{\"meta\": {\"interval\": %.6f, \"startTime\": %.3f, "
	               "\"abi\": \"\", \"oscpu\": \"\", \"platform\": "
	               "\"Linux\", \"misc\": ",
	               interval_ms, (double)p->meta.start_unix_us / 1000.0);
	char misc[96];
	snprintf(misc, sizeof misc, "pystack-dump %s sampling, pid %d",
	         pyd_sample_mode_name(p->meta.mode), p->meta.pid);
	pyd_buf_json_str(b, misc);
	PUT(b, ", \"processType\": 0, \"product\": ");
	char product[64];
	snprintf(product, sizeof product, "Python %s",
	         p->meta.python_version ? p->meta.python_version : "");
	pyd_buf_json_str(b, product);
	PUT(b, ",\n \"categories\": ["
	       "{\"name\": \"Other\", \"color\": \"grey\", "
	       "\"subcategories\": [\"Other\"]}, "
	       "{\"name\": \"Python\", \"color\": \"yellow\", "
	       "\"subcategories\": [\"Other\"]}, "
	       "{\"name\": \"Task\", \"color\": \"green\", "
	       "\"subcategories\": [\"Other\"]}, "
	       "{\"name\": \"Awaiting\", \"color\": \"blue\", "
	       "\"subcategories\": [\"Other\"]}],\n"
	       " \"stackwalk\": 0, \"toolkit\": \"\", \"version\": 32, "
	       "\"preprocessedProfileVersion\": 57, \"appBuildID\": \"\", "
	       "\"physicalCPUs\": 0, \"logicalCPUs\": 0, \"CPUName\": \"\", "
	       "\"symbolicated\": true, \"markerSchema\": [], "
	       "\"importedFrom\": \"pystack-dump\", \"extensions\": "
	       "{\"id\": [], \"name\": [], \"baseURL\": [], \"length\": 0}},\n"
	       "\"libs\": [], \"pages\": [],\n");
}

/* shared.stringArray: function k's name at 2k, its file at 2k+1. */
static void strings_json(struct pyd_buf *b, const struct gk *g)
{
	const struct pyd_profile *p = g->p;
	char label[512];

	PUT(b, "\"shared\": {\"stringArray\": [");
	for (uint32_t k = 0; k < g->nfuncs; k++) {
		const struct pyd_prof_frame *f = &p->frames[g->frame_rep[k]];
		pyd_buf_printf(b, "%s", k ? ",\n " : "\n ");
		pyd_buf_json_str(b, frame_name(f, label, sizeof label));
		PUT(b, ", ");
		pyd_buf_json_str(b, f->file ? f->file : "");
	}
	PUT(b, "]}}\n");
}

static void gk_free(struct gk *g)
{
	free(g->func_of);
	free(g->frame_rep);
	free(g->local);
	free(g->stamp);
	free(g->frames);
	free(g->frame_cat);
	free(g->funcs);
	free(g->st_frame);
	free(g->st_prefix);
	free(g->st_node);
	free(g->stack_of);
}

static bool gk_init(struct gk *g, const struct pyd_profile *p)
{
	size_t nf = p->nframes + 1, nn = p->nnodes + 1;

	*g = (struct gk){.p = p};
	g->func_of = malloc(nf * sizeof *g->func_of);
	g->frame_rep = malloc(nf * sizeof *g->frame_rep);
	g->local = malloc(3 * nf * sizeof *g->local);
	g->stamp = calloc(3 * nf, sizeof *g->stamp);
	/* Each frame at most twice: running and awaiting. */
	g->frames = malloc(2 * nf * sizeof *g->frames);
	g->frame_cat = malloc(2 * nf * sizeof *g->frame_cat);
	g->funcs = malloc(nf * sizeof *g->funcs);
	/* A thread has fewer nodes than the profile, and at most one
	 * awaiting twin per node. */
	g->st_frame = malloc(2 * nn * sizeof *g->st_frame);
	g->st_prefix = malloc(2 * nn * sizeof *g->st_prefix);
	g->st_node = malloc(2 * nn * sizeof *g->st_node);
	g->stack_of = malloc(nn * sizeof *g->stack_of);
	return g->func_of && g->frame_rep && g->local && g->stamp &&
	       g->frames && g->frame_cat && g->funcs && g->st_frame &&
	       g->st_prefix && g->st_node && g->stack_of && group_functions(g);
}

void pyd_report_prof_gecko(struct pyd_buf *b, const struct pyd_profile *p,
                           size_t limit)
{
	(void)limit;
	double interval_ms = p->meta.interval_s > 0 ? p->meta.interval_s * 1e3
	                     : p->meta.rate_hz > 0  ? 1e3 / p->meta.rate_hz
	                                            : 1.0;
	struct gk g;

	if (!gk_init(&g, p)) {
		gk_free(&g);
		b->failed = true;
		return;
	}
	meta_json(b, p, interval_ms);
	PUT(b, "\"threads\": [");
	for (size_t i = 0; i < p->nthreads; i++) {
		pyd_buf_printf(b, "%s", i ? ",\n" : "\n");
		thread_json(b, &g, (uint32_t)i, is_main_thread(p, i),
		            interval_ms);
	}
	PUT(b, "],\n");
	strings_json(b, &g);
	gk_free(&g);
}
