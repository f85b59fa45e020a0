/*
 * pstats: the file cProfile writes and pstats.Stats loads, a marshal'd
 * dict {(file, first line, name): (cc, nc, tt, ct, callers)} with callers
 * {(file, first line, name): (nc, cc, tt, ct)} (cProfile's orders).
 * Counts are samples, as in CPython 3.15's profiling.sampling: cc the
 * samples in the function itself, nc those with it anywhere on the
 * stack, once per sample however deep the recursion; tt and ct are those
 * times the interval.  A caller's entry is the same split of the samples
 * where it called the function directly.  With processes kept apart
 * (--subprocesses), each process is a function that calls its threads'
 * outermost ones, as collapsed stacks start at the process.
 *
 * marshal is written by hand with the types every 3.6+ reads: '{' ... '0',
 * '(' with a 32-bit count, 'i' (or 'l' past 32 bits), 'g' (a binary
 * double) and 'u' (UTF-8: the session's strings always are).
 */
#include <stdlib.h>
#include <string.h>

#include "profiles.h"

/* A function: frames that differ only in their sampled line are one. */
struct func_key {
	enum pyd_prof_frame_kind kind;
	const char *file, *name; /* interned: compared by address */
	int firstline;
	uint32_t frame;
};

struct tally {
	uint64_t direct, cumul;
	uint32_t on_path; /* frames of the current path counted here */
};

struct edge {
	uint32_t caller, callee; /* function ids */
	struct tally t;
};

struct pstats {
	const struct pyd_profile *p;
	uint32_t *func_of; /* frame -> function id */
	uint32_t *frame_of_func; /* function id -> one of its frames */
	struct tally *funcs; /* the functions' ids, then the processes' */
	size_t nfuncs, nprocs;
	struct edge *edges;
	size_t nedges;
	uint32_t *edge_tab; /* open addressing over edges; UINT32_MAX empty */
	size_t edge_mask;
	struct { uint32_t func, edge; } *path;
};

static struct func_key key_of(const struct pyd_prof_frame *f, uint32_t i)
{
	return (struct func_key){f->kind, f->file,
	                         f->qualname ? f->qualname : f->function,
	                         f->firstline, i};
}

static int cmp_ptr(const void *a, const void *b)
{
	return (uintptr_t)a < (uintptr_t)b ? -1 : (uintptr_t)a > (uintptr_t)b;
}

static int cmp_key(const void *va, const void *vb)
{
	const struct func_key *a = va, *b = vb;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->firstline != b->firstline)
		return a->firstline < b->firstline ? -1 : 1;
	int c = cmp_ptr(a->file, b->file);
	return c ? c : cmp_ptr(a->name, b->name);
}

/* Number the functions: sort the frames by key, one id per run. */
static bool number_funcs(struct pstats *s)
{
	const struct pyd_profile *p = s->p;
	struct func_key *k = malloc((p->nframes + 1) * sizeof *k);
	if (!k)
		return false;
	for (uint32_t i = 0; i < p->nframes; i++)
		k[i] = key_of(&p->frames[i], i);
	qsort(k, p->nframes, sizeof *k, cmp_key);
	for (size_t i = 0; i < p->nframes; i++) {
		if (!i || cmp_key(&k[i - 1], &k[i]))
			s->frame_of_func[s->nfuncs++] = k[i].frame;
		s->func_of[k[i].frame] = (uint32_t)s->nfuncs - 1;
	}
	free(k);
	return true;
}

/* The edge caller -> callee, added if new.  A node adds at most one edge
 * and the table has twice as many slots as nodes: it never fills. */
static uint32_t edge_id(struct pstats *s, uint32_t caller, uint32_t callee)
{
	size_t j = (((uint64_t)caller << 32 | callee) * 0x9E3779B97F4A7C15ULL >>
	            17) & s->edge_mask;
	for (; s->edge_tab[j] != UINT32_MAX; j = (j + 1) & s->edge_mask) {
		const struct edge *e = &s->edges[s->edge_tab[j]];
		if (e->caller == caller && e->callee == callee)
			return s->edge_tab[j];
	}
	s->edges[s->nedges] = (struct edge){caller, callee, {0, 0, 0}};
	s->edge_tab[j] = (uint32_t)s->nedges;
	return (uint32_t)s->nedges++;
}

/* A node's samples: all of them for a tally not yet on the path (so
 * recursion counts a sample once), its own as direct. */
static void count(struct tally *t, const struct pyd_prof_node *n)
{
	if (!t->on_path++)
		t->cumul += n->total;
	t->direct += n->self;
}

static void leave(struct pstats *s, size_t depth)
{
	s->funcs[s->path[depth].func].on_path--;
	if (s->path[depth].edge != UINT32_MAX)
		s->edges[s->path[depth].edge].t.on_path--;
}

/* One thread's tree, keeping the path of functions from its node (from
 * its process, when processes are functions). */
static void tally_thread(struct pstats *s, const struct pyd_prof_thread *t)
{
	struct pyd_prof_walk w;
	size_t base = s->nprocs ? 1 : 0, len = 0;
	uint32_t n;

	if (base) {
		s->path[len].func = (uint32_t)(s->nfuncs + t->process);
		s->path[len++].edge = UINT32_MAX;
		count(&s->funcs[s->path[0].func], &s->p->nodes[t->node]);
	}
	for (pyd_prof_walk_start(&w, s->p, t->node); pyd_prof_walk_next(&w, &n);) {
		const struct pyd_prof_node *node = &s->p->nodes[n];
		uint32_t f = s->func_of[node->frame], e = UINT32_MAX;
		for (; len >= w.depth + base; len--)
			leave(s, len - 1);
		count(&s->funcs[f], node);
		if (len) {
			e = edge_id(s, s->path[len - 1].func, f);
			count(&s->edges[e].t, node);
		}
		s->path[len].func = f;
		s->path[len++].edge = e;
	}
	for (; len; len--)
		leave(s, len - 1);
}

static void put_u32(struct pyd_buf *b, uint32_t v)
{
	unsigned char le[4] = {v, v >> 8, v >> 16, v >> 24};
	pyd_buf_put(b, (const char *)le, 4);
}

/* marshal's TYPE_LONG: 15-bit digits, least significant first. */
static void put_int(struct pyd_buf *b, uint64_t v)
{
	if (v <= INT32_MAX) {
		pyd_buf_put(b, "i", 1);
		put_u32(b, (uint32_t)v);
		return;
	}
	uint32_t ndigits = 0;
	for (uint64_t x = v; x; x >>= 15)
		ndigits++;
	pyd_buf_put(b, "l", 1);
	put_u32(b, ndigits);
	for (; v; v >>= 15) {
		unsigned char d[2] = {v & 0xff, (v >> 8) & 0x7f};
		pyd_buf_put(b, (const char *)d, 2);
	}
}

static void put_float(struct pyd_buf *b, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	pyd_buf_put(b, "g", 1);
	put_u32(b, (uint32_t)bits);
	put_u32(b, (uint32_t)(bits >> 32));
}

static void put_str(struct pyd_buf *b, const char *str)
{
	size_t n = strlen(str);
	pyd_buf_put(b, "u", 1);
	put_u32(b, (uint32_t)n);
	pyd_buf_put(b, str, n);
}

static void put_tuple(struct pyd_buf *b, uint32_t n)
{
	pyd_buf_put(b, "(", 1);
	put_u32(b, n);
}

/* (file, first line, name); a process, a task boundary or the frames a
 * deep stack left out are named like a built-in, ('~', 0, "<task NAME>"). */
static void put_func(struct pyd_buf *b, const struct pstats *s, uint32_t id)
{
	const struct pyd_prof_frame *f =
	    id < s->nfuncs ? &s->p->frames[s->frame_of_func[id]] : NULL;
	char label[512] = "<";

	put_tuple(b, 3);
	if (f && f->kind == PYD_PF_PYTHON) {
		put_str(b, f->file);
		put_int(b, f->firstline > 0 ? (uint64_t)f->firstline : 0);
		put_str(b, f->qualname ? f->qualname : f->function);
		return;
	}
	put_str(b, "~");
	put_int(b, 0);
	if (f) {
		put_str(b, pyd_prof_frame_label(f, label, sizeof label));
		return;
	}
	pyd_prof_process_label(s->p, (uint32_t)(id - s->nfuncs), label + 1,
	                       sizeof label - 2);
	strcat(label, ">");
	put_str(b, label);
}

static void put_counts(struct pyd_buf *b, uint64_t first, uint64_t second,
                       const struct tally *t, double interval)
{
	put_int(b, first);
	put_int(b, second);
	put_float(b, (double)t->direct * interval);
	put_float(b, (double)t->cumul * interval);
}

/* by_callee: the edges sorted by callee, start[f] the first of f's. */
static void put_stats(struct pyd_buf *b, const struct pstats *s,
                      const uint32_t *by_callee, const size_t *start)
{
	double iv = s->p->meta.interval_s > 0 ? s->p->meta.interval_s : 0;

	pyd_buf_put(b, "{", 1);
	for (size_t f = 0; f < s->nfuncs + s->nprocs; f++) {
		const struct tally *t = &s->funcs[f];
		if (!t->cumul)
			continue;
		put_func(b, s, (uint32_t)f);
		put_tuple(b, 5);
		put_counts(b, t->direct, t->cumul, t, iv);
		pyd_buf_put(b, "{", 1);
		for (size_t i = start[f]; i < start[f + 1]; i++) {
			const struct edge *e = &s->edges[by_callee[i]];
			put_func(b, s, e->caller);
			put_tuple(b, 4);
			put_counts(b, e->t.cumul, e->t.direct, &e->t, iv);
		}
		pyd_buf_put(b, "0", 1);
	}
	pyd_buf_put(b, "0", 1);
}

/* The edges grouped by callee (a counting sort), then the dict. */
static bool write_stats(struct pyd_buf *b, const struct pstats *s)
{
	uint32_t *by_callee = malloc((s->nedges + 1) * sizeof *by_callee);
	size_t nids = s->nfuncs + s->nprocs;
	size_t *start = calloc(nids + 2, sizeof *start);
	bool ok = by_callee && start;

	for (size_t i = 0; ok && i < s->nedges; i++)
		start[s->edges[i].callee + 2]++;
	for (size_t f = 2; ok && f < nids + 2; f++)
		start[f] += start[f - 1];
	for (size_t i = 0; ok && i < s->nedges; i++)
		by_callee[start[s->edges[i].callee + 1]++] = (uint32_t)i;
	if (ok)
		put_stats(b, s, by_callee, start);
	free(by_callee);
	free(start);
	return ok;
}

void pyd_report_prof_pstats(struct pyd_buf *b, const struct pyd_profile *p,
                            size_t limit)
{
	(void)limit;
	size_t n = p->nnodes + 1, cap = 2;
	while (cap < 2 * n)
		cap *= 2;
	struct pstats s = {
	    .p = p,
	    .func_of = malloc((p->nframes + 1) * sizeof *s.func_of),
	    .frame_of_func = malloc((p->nframes + 1) * sizeof *s.frame_of_func),
	    .funcs = calloc(p->nframes + p->nprocesses + 1, sizeof *s.funcs),
	    .nprocs = p->by_process ? p->nprocesses : 0,
	    .edges = malloc(n * sizeof *s.edges),
	    .edge_tab = malloc(cap * sizeof *s.edge_tab),
	    .edge_mask = cap - 1,
	    .path = malloc(n * sizeof *s.path),
	};
	bool ok = s.func_of && s.frame_of_func && s.funcs && s.edges &&
	          s.edge_tab && s.path && number_funcs(&s);
	if (ok) {
		memset(s.edge_tab, 0xff, cap * sizeof *s.edge_tab);
		for (size_t i = 0; i < p->nthreads; i++)
			tally_thread(&s, &p->threads[i]);
		ok = write_stats(b, &s);
	}
	if (!ok)
		b->failed = true;
	free(s.func_of);
	free(s.frame_of_func);
	free(s.funcs);
	free(s.edges);
	free(s.edge_tab);
	free(s.path);
}
