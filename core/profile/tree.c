/*
 * Call-tree aggregation of samples.
 *
 * A sample is a stack; the tree keeps one node per distinct path and a
 * count, so 10 M samples of one stack cost one path.  Three hash tables
 * make adding cheap: strings interned by content, frames interned by
 * their (interned) strings, children by (parent, frame).  In front of
 * them, a direct-mapped cache from the caller's string addresses to a
 * frame, and per thread the previous sample's path: a profiler sees the
 * same stack again and again, so most frames cost one comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "../grow.h"

#define DEFAULT_MAX_NODES (1u << 20)
#define PCACHE_SIZE       8192 /* a power of two */

struct pcache_entry {
	const char *function, *qualname, *file;
	int line, firstline;
	uint32_t frame;
	uint32_t era;   /* 0: empty; an earlier era: forgotten */
};

/* A thread's previous path, outermost first. */
struct last_path {
	struct path_step {
		uint32_t frame, node;
	} * v;
	size_t n, cap;
};

struct pyd_profile_priv {
	char **strs; /* open addressing, interned copies */
	size_t nstrs, strs_cap;
	uint32_t *frame_tab; /* open addressing, frame indexes */
	size_t frames_cap, frame_tab_cap;
	uint32_t *child_tab; /* open addressing, node indexes */
	size_t nodes_cap, child_tab_cap;
	size_t threads_cap, processes_cap;
	uint32_t *thread_tab; /* open addressing, thread indexes */
	size_t thread_tab_cap;
	/* The thread last looked up: a sampler adds a thread's samples one
	 * round after another, most of them of one thread. */
	size_t last_thread;
	uint32_t *process_threads; /* threads of each process */
	size_t process_threads_cap;
	struct last_path *last; /* per thread */
	struct last_path *units; /* per unit (pyd_profile_add_unit) */
	size_t units_cap;
	uint32_t *ids; /* the sample told to on_sample, as frame indexes */
	size_t ids_cap;
	/* Allocated by the first sample: a profile read from a file, or
	 * copied to be written, never looks frames up by address. */
	struct pcache_entry *pcache;
	uint32_t era; /* from 1; pyd_profile_forget_strings counts them */
	size_t max_nodes;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Grow an open-addressing table of uint32 slots (PYD_PROF_NONE empty),
 * re-inserting with rehash(). */
static bool grow_u32(uint32_t **tab, size_t *cap, size_t used,
                     uint64_t (*rehash)(const struct pyd_profile *, uint32_t),
                     const struct pyd_profile *p)
{
	if ((used + 1) * 2 <= *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint32_t *t = malloc(ncap * sizeof *t);
	if (!t)
		return false;
	memset(t, 0xff, ncap * sizeof *t);
	for (size_t i = 0; i < *cap; i++) {
		uint32_t v = (*tab)[i];
		if (v == PYD_PROF_NONE)
			continue;
		size_t j = rehash(p, v) & (ncap - 1);
		while (t[j] != PYD_PROF_NONE)
			j = (j + 1) & (ncap - 1);
		t[j] = v;
	}
	free(*tab);
	*tab = t;
	*cap = ncap;
	return true;
}

static const char *intern(struct pyd_profile_priv *q, const char *s)
{
	if (!s)
		return NULL;
	if ((q->nstrs + 1) * 2 > q->strs_cap) {
		size_t ncap = q->strs_cap ? q->strs_cap * 2 : 1024;
		char **t = calloc(ncap, sizeof *t);
		if (!t)
			return NULL;
		for (size_t i = 0; i < q->strs_cap; i++) {
			if (!q->strs[i])
				continue;
			size_t j = hash_str(q->strs[i]) & (ncap - 1);
			while (t[j])
				j = (j + 1) & (ncap - 1);
			t[j] = q->strs[i];
		}
		free(q->strs);
		q->strs = t;
		q->strs_cap = ncap;
	}
	size_t j = hash_str(s) & (q->strs_cap - 1);
	for (; q->strs[j]; j = (j + 1) & (q->strs_cap - 1))
		if (q->strs[j] == s || !strcmp(q->strs[j], s))
			return q->strs[j];
	char *copy = strdup(s);
	if (copy) {
		q->strs[j] = copy;
		q->nstrs++;
	}
	return copy;
}

/* Interned strings compare by address. */
static uint64_t hash_frame(const struct pyd_prof_frame *f)
{
	uint64_t h = mix(0, (uintptr_t)f->function);
	h = mix(h, (uintptr_t)f->qualname);
	h = mix(h, (uintptr_t)f->file);
	h = mix(h, (uint64_t)(int64_t)f->firstline);
	return mix(h, (uint64_t)(int64_t)f->line * 2 + f->kind);
}

static uint64_t rehash_frame(const struct pyd_profile *p, uint32_t i)
{
	return hash_frame(&p->frames[i]);
}

static bool same_frame(const struct pyd_prof_frame *a,
                       const struct pyd_prof_frame *b)
{
	return a->function == b->function && a->qualname == b->qualname &&
	       a->file == b->file && a->line == b->line &&
	       a->firstline == b->firstline && a->kind == b->kind;
}

/* The index of frame f (strings already interned), added if new. */
static uint32_t frame_index(struct pyd_profile *p,
                            const struct pyd_prof_frame *f)
{
	struct pyd_profile_priv *q = p->priv;
	if (!grow_u32(&q->frame_tab, &q->frame_tab_cap, p->nframes,
	              rehash_frame, p))
		return PYD_PROF_NONE;
	size_t mask = q->frame_tab_cap - 1, j = hash_frame(f) & mask;
	for (; q->frame_tab[j] != PYD_PROF_NONE; j = (j + 1) & mask)
		if (same_frame(&p->frames[q->frame_tab[j]], f))
			return q->frame_tab[j];
	if (!pyd_grow_from((void **)&p->frames, &q->frames_cap, p->nframes + 1,
	                   sizeof *p->frames, 256))
		return PYD_PROF_NONE;
	p->frames[p->nframes] = *f;
	q->frame_tab[j] = (uint32_t)p->nframes;
	return (uint32_t)p->nframes++;
}

/* The frame of a caller's struct pyd_frame, through the address cache. */
static uint32_t frame_of(struct pyd_profile *p, const struct pyd_frame *fr)
{
	struct pyd_profile_priv *q = p->priv;
	int line = p->lines ? fr->line : 0;
	uint64_t h =
	    mix(mix(mix(0, (uintptr_t)fr->function), (uintptr_t)fr->file),
	        (uint64_t)(int64_t)line);
	/* A frame is found again by its strings' addresses: a code object's
	 * live until pyd_profile_forget_strings.  A frame without a file (a task's
	 * name, <GC>, a cut stack's note) may come in a buffer that holds
	 * other text next time: its text is compared too. */
	if (!q->pcache)
		q->pcache = calloc(PCACHE_SIZE, sizeof *q->pcache);
	struct pcache_entry dummy, *e =
	    q->pcache ? &q->pcache[h & (PCACHE_SIZE - 1)] : &dummy;
	if (q->pcache && e->era == q->era &&
	    e->function == fr->function &&
	    e->qualname == fr->qualname && e->file == fr->file &&
	    e->line == line && e->firstline == fr->firstline &&
	    (fr->file || !strcmp(p->frames[e->frame].function,
	                         fr->function ? fr->function : "???")))
		return e->frame;
	struct pyd_prof_frame f = {
	    .function = intern(q, fr->function ? fr->function : "???"),
	    .qualname = intern(q, fr->qualname),
	    .file = intern(q, fr->file),
	    .line = fr->file ? line : 0,
	    .firstline = fr->file ? fr->firstline : 0,
	    .kind = fr->elided ? PYD_PF_ELIDED
	            : fr->gc   ? PYD_PF_GC
	            : fr->file ? PYD_PF_PYTHON
	                       : PYD_PF_TASK,
	};
	if (!f.function || (fr->qualname && !f.qualname) ||
	    (fr->file && !f.file))
		return PYD_PROF_NONE;
	uint32_t idx = frame_index(p, &f);
	if (idx != PYD_PROF_NONE)
		*e = (struct pcache_entry){fr->function, fr->qualname, fr->file,
		                           line, fr->firstline, idx, q->era};
	return idx;
}

void pyd_profile_forget_strings(struct pyd_profile *p)
{
	struct pyd_profile_priv *q = p->priv;
	/* After 2^32 eras an entry could look current again: empty them. */
	if (++q->era == 0) {
		if (q->pcache)
			memset(q->pcache, 0, PCACHE_SIZE * sizeof *q->pcache);
		q->era = 1;
	}
}

static uint64_t hash_child(uint32_t parent, uint32_t frame)
{
	return mix(parent, frame);
}

static uint64_t rehash_child(const struct pyd_profile *p, uint32_t i)
{
	return hash_child(p->nodes[i].parent, p->nodes[i].frame);
}

static uint32_t new_node(struct pyd_profile *p, uint32_t parent, uint32_t frame)
{
	struct pyd_profile_priv *q = p->priv;
	if (!pyd_grow_from((void **)&p->nodes, &q->nodes_cap, p->nnodes + 1,
	                   sizeof *p->nodes, 1024))
		return PYD_PROF_NONE;
	uint32_t i = (uint32_t)p->nnodes++;
	struct pyd_prof_node *n = &p->nodes[i];
	*n = (struct pyd_prof_node){.frame = frame,
	                            .parent = parent,
	                            .first_child = PYD_PROF_NONE,
	                            .next_sibling = PYD_PROF_NONE};
	if (parent != PYD_PROF_NONE) {
		n->next_sibling = p->nodes[parent].first_child;
		p->nodes[parent].first_child = i;
	}
	return i;
}

/* The child of parent for frame, created if new; parent itself when the
 * tree is full (the sample is folded into its caller). */
static uint32_t child(struct pyd_profile *p, uint32_t parent, uint32_t frame)
{
	struct pyd_profile_priv *q = p->priv;
	if (!grow_u32(&q->child_tab, &q->child_tab_cap, p->nnodes, rehash_child,
	              p))
		return PYD_PROF_NONE;
	size_t mask = q->child_tab_cap - 1,
	       j = hash_child(parent, frame) & mask;
	for (; q->child_tab[j] != PYD_PROF_NONE; j = (j + 1) & mask) {
		const struct pyd_prof_node *n = &p->nodes[q->child_tab[j]];
		if (n->parent == parent && n->frame == frame)
			return q->child_tab[j];
	}
	if (p->nnodes >= q->max_nodes) {
		p->truncated = true;
		return parent;
	}
	uint32_t i = new_node(p, parent, frame);
	if (i != PYD_PROF_NONE)
		q->child_tab[j] = i;
	return i;
}

struct pyd_profile *pyd_profile_new(bool lines, size_t max_nodes)
{
	struct pyd_profile *p = calloc(1, sizeof *p);
	struct pyd_profile_priv *q = calloc(1, sizeof *q);
	if (!p || !q) {
		free(p);
		free(q);
		return NULL;
	}
	p->priv = q;
	p->lines = lines;
	p->gc = true;
	q->max_nodes = max_nodes ? max_nodes : DEFAULT_MAX_NODES;
	if (q->max_nodes > PYD_PROF_NONE - 1)
		q->max_nodes = PYD_PROF_NONE - 1;
	q->era = 1; /* a zeroed entry, of era 0, is empty */
	if (new_node(p, PYD_PROF_NONE, PYD_PROF_NONE) == PYD_PROF_NONE) {
		pyd_profile_free(p);
		return NULL;
	}
	return p;
}

void pyd_profile_free(struct pyd_profile *p)
{
	if (!p)
		return;
	struct pyd_profile_priv *q = p->priv;
	for (size_t i = 0; i < q->strs_cap; i++)
		free(q->strs[i]);
	for (size_t i = 0; i < p->nthreads; i++)
		free(q->last[i].v);
	for (size_t i = 0; i < q->units_cap; i++)
		free(q->units[i].v);
	free(q->units);
	free(q->strs);
	free(q->frame_tab);
	free(q->child_tab);
	free(q->thread_tab);
	free(q->process_threads);
	free(q->last);
	free(q->ids);
	free(q->pcache);
	free(q);
	free(p->frames);
	free(p->nodes);
	free(p->threads);
	free(p->processes);
	free(p);
}

uint32_t pyd_profile_process(struct pyd_profile *p, int pid, int ppid,
                             const char *cmdline, const char *version)
{
	struct pyd_profile_priv *q = p->priv;
	if (!pyd_grow((void **)&p->processes, &q->processes_cap,
	              p->nprocesses + 1, sizeof *p->processes) ||
	    !pyd_grow((void **)&q->process_threads, &q->process_threads_cap,
	              p->nprocesses + 1, sizeof *q->process_threads))
		return PYD_PROF_NONE;
	q->process_threads[p->nprocesses] = 0;
	struct pyd_prof_process *pr = &p->processes[p->nprocesses];
	*pr = (struct pyd_prof_process){.pid = pid, .ppid = ppid};
	snprintf(pr->cmdline, sizeof pr->cmdline, "%s", cmdline ? cmdline : "");
	snprintf(pr->python_version, sizeof pr->python_version, "%s",
	         version ? version : "");
	return (uint32_t)p->nprocesses++;
}

static uint64_t hash_thread(uint32_t process, int64_t tid)
{
	return mix(process, (uint64_t)tid);
}

static uint64_t rehash_thread(const struct pyd_profile *p, uint32_t i)
{
	return hash_thread(p->threads[i].process, p->threads[i].tid);
}

/* Room for thread n and its per-thread state. */
static bool grow_threads(struct pyd_profile *p)
{
	struct pyd_profile_priv *q = p->priv;
	/* Two arrays of one capacity, q->threads_cap: set once both grew. */
	size_t cap = q->threads_cap;
	return pyd_grow_from((void **)&p->threads, &cap, p->nthreads + 1,
	                     sizeof *p->threads, 8) &&
	       pyd_grow_from((void **)&q->last, &q->threads_cap, p->nthreads + 1,
	                     sizeof *q->last, 8);
}

/* The index of thread tid of process, or SIZE_MAX; *slot: where in the
 * hash table it is, or would go. */
static size_t find_thread(const struct pyd_profile *p, uint32_t process,
                          int64_t tid, size_t *slot)
{
	const struct pyd_profile_priv *q = p->priv;
	if (!q->thread_tab_cap)
		return SIZE_MAX;
	size_t mask = q->thread_tab_cap - 1, j = hash_thread(process, tid) & mask;
	for (; q->thread_tab[j] != PYD_PROF_NONE; j = (j + 1) & mask) {
		const struct pyd_prof_thread *t = &p->threads[q->thread_tab[j]];
		if (t->tid == tid && t->process == process)
			break;
	}
	*slot = j;
	return q->thread_tab[j] == PYD_PROF_NONE ? SIZE_MAX : q->thread_tab[j];
}

/* Name thread i, once the sampler has read its name; returns i. */
static size_t name_thread(struct pyd_profile *p, size_t i, const char *name)
{
	struct pyd_prof_thread *t = &p->threads[i];
	if (name && *name && !t->name[0])
		strncpy(t->name, name, sizeof t->name - 1);
	return i;
}

/* The thread's index, added (with its node) if new: past
 * PYD_PROF_MAX_THREADS threads of a process, new ones are counted as one
 * thread, PYD_PROF_OTHER_TID, so that a process that keeps starting
 * threads cannot make the profile grow without bound. */
static size_t thread_index(struct pyd_profile *p, uint32_t process,
                           int64_t tid, const char *name)
{
	struct pyd_profile_priv *q = p->priv;
	size_t j, found = q->last_thread;
	if (found < p->nthreads && p->threads[found].tid == tid &&
	    p->threads[found].process == process)
		return name_thread(p, found, name);
	if (process >= p->nprocesses ||
	    !grow_u32(&q->thread_tab, &q->thread_tab_cap, p->nthreads,
	              rehash_thread, p))
		return SIZE_MAX;
	found = find_thread(p, process, tid, &j);
	if (found != SIZE_MAX) {
		q->last_thread = found;
		return name_thread(p, found, name);
	}
	if (tid != PYD_PROF_OTHER_TID &&
	    q->process_threads[process] >= PYD_PROF_MAX_THREADS)
		return thread_index(p, process, PYD_PROF_OTHER_TID,
		                    "<other threads>");
	/* Thread nodes are told apart by a frame index no frame has. */
	uint32_t node = grow_threads(p) ? new_node(p, 0, PYD_PROF_NONE)
	                                : PYD_PROF_NONE;
	if (node == PYD_PROF_NONE)
		return SIZE_MAX;
	struct pyd_prof_thread *t = &p->threads[p->nthreads];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->node = node;
	t->process = process;
	t->folded = 1;
	if (name)
		strncpy(t->name, name, sizeof t->name - 1);
	memset(&q->last[p->nthreads], 0, sizeof q->last[0]);
	q->thread_tab[j] = (uint32_t)p->nthreads;
	q->process_threads[process]++;
	return p->nthreads++;
}

/* The sample just counted on thread ti (its path in last[ti]) to the
 * hook. */
static enum pyd_err tell(struct pyd_profile *p, size_t ti, size_t kept,
                         bool awaiting)
{
	struct pyd_profile_priv *q = p->priv;
	const struct last_path *last = &q->last[ti];
	if (!pyd_grow((void **)&q->ids, &q->ids_cap, last->n, sizeof *q->ids))
		return PYD_E_NOMEM;
	for (size_t i = 0; i < last->n; i++)
		q->ids[i] = last->v[i].frame;
	struct pyd_prof_sample s = {(uint32_t)ti, q->ids, last->n, kept,
	                            awaiting};
	p->on_sample(p->on_sample_ctx, p, &s);
	return PYD_OK;
}

/* The thread's path becomes a unit's (for the hook, which tells each
 * sample by what it shares with the thread's previous one): how many
 * outer frames the two share. */
static size_t take_path(struct last_path *last, const struct last_path *unit)
{
	size_t kept = 0;
	while (kept < last->n && kept < unit->n &&
	       last->v[kept].frame == unit->v[kept].frame)
		kept++;
	if (!pyd_grow((void **)&last->v, &last->cap, unit->n, sizeof *last->v))
		return SIZE_MAX;
	memcpy(last->v, unit->v, unit->n * sizeof *unit->v);
	last->n = unit->n;
	return kept;
}

/* Count a sample whose outermost `same` frames are the previous path's:
 * the thread's, or if unit is not NULL, that unit's. */
static enum pyd_err count_sample(struct pyd_profile *p, uint32_t process,
                                 int64_t tid, const char *thread_name,
                                 const struct pyd_frame *frames, size_t n,
                                 bool awaiting, size_t same,
                                 struct last_path *unit)
{
	struct pyd_profile_priv *q = p->priv;
	size_t ti = thread_index(p, process, tid, thread_name);
	if (ti == SIZE_MAX)
		return PYD_E_NOMEM;
	struct last_path *last = unit ? unit : &q->last[ti];
	if (!pyd_grow((void **)&last->v, &last->cap, n, sizeof *last->v))
		return PYD_E_NOMEM;
	uint32_t node = p->threads[ti].node;
	size_t d = 0, kept = 0;
	if (same && same <= n && same <= last->n) {
		d = kept = same;
		node = last->v[same - 1].node;
	}
	/* Outermost first; reuse the previous path while it matches. */
	for (size_t i = n - d; i-- > 0; d++) {
		uint32_t f = frame_of(p, &frames[i]);
		if (f == PYD_PROF_NONE)
			return PYD_E_NOMEM;
		if (d < last->n && last->v[d].frame == f) {
			node = last->v[d].node;
			kept++;
			continue;
		}
		last->n = d;
		node = child(p, node, f);
		if (node == PYD_PROF_NONE)
			return PYD_E_NOMEM;
		last->v[d] = (struct path_step){f, node};
	}
	last->n = d;
	p->nodes[node].self++;
	if (awaiting)
		p->nodes[node].self_await++;
	if (!p->on_sample)
		return PYD_OK;
	if (unit && (kept = take_path(&q->last[ti], unit)) == SIZE_MAX)
		return PYD_E_NOMEM;
	return tell(p, ti, kept, awaiting);
}

enum pyd_err pyd_profile_add(struct pyd_profile *p, uint32_t process,
                             int64_t tid, const char *thread_name,
                             const struct pyd_frame *frames, size_t n,
                             bool awaiting)
{
	return count_sample(p, process, tid, thread_name, frames, n, awaiting,
	                    0, NULL);
}

enum pyd_err pyd_profile_add_unit(struct pyd_profile *p, uint32_t process,
                                  int64_t tid, const char *thread_name,
                                  const struct pyd_frame *frames, size_t n,
                                  bool awaiting, size_t unit)
{
	struct pyd_profile_priv *q = p->priv;
	size_t had = q->units_cap;
	if (!pyd_grow((void **)&q->units, &q->units_cap, unit + 1,
	              sizeof *q->units))
		return PYD_E_NOMEM;
	memset(q->units + had, 0, (q->units_cap - had) * sizeof *q->units);
	return count_sample(p, process, tid, thread_name, frames, n, awaiting,
	                    0, &q->units[unit]);
}

enum pyd_err pyd_profile_add_same(struct pyd_profile *p, uint32_t process,
                                  int64_t tid, const char *thread_name,
                                  const struct pyd_frame *frames, size_t n,
                                  size_t same)
{
	return count_sample(p, process, tid, thread_name, frames, n, false,
	                    same, NULL);
}

const char *pyd_profile_intern(struct pyd_profile *p, const char *s)
{
	return intern(p->priv, s);
}

uint32_t pyd_profile_thread_node(struct pyd_profile *p, uint32_t process,
                                 int64_t tid, const char *name)
{
	size_t ti = thread_index(p, process, tid, name);
	return ti == SIZE_MAX ? PYD_PROF_NONE : p->threads[ti].node;
}

uint32_t pyd_profile_child(struct pyd_profile *p, uint32_t parent,
                           const struct pyd_prof_frame *f)
{
	struct pyd_prof_frame c = *f;
	c.function = intern(p->priv, f->function ? f->function : "???");
	c.qualname = intern(p->priv, f->qualname);
	c.file = intern(p->priv, f->file);
	if (!p->lines)
		c.line = 0;
	if (!c.function || (f->qualname && !c.qualname) || (f->file && !c.file))
		return PYD_PROF_NONE;
	uint32_t frame = frame_index(p, &c);
	return frame == PYD_PROF_NONE ? frame : child(p, parent, frame);
}

void pyd_profile_thread_run(struct pyd_profile *p, uint32_t process,
                            int64_t tid, bool running)
{
	size_t slot, i = find_thread(p, process, tid, &slot);
	if (i == SIZE_MAX)
		return;
	p->threads[i].watched = true;
	p->threads[i].ran |= running;
}

void pyd_profile_finish(struct pyd_profile *p)
{
	for (size_t i = 0; i < p->nnodes; i++)
		p->nodes[i].total = p->nodes[i].self;
	/* A child always comes after its parent. */
	for (size_t i = p->nnodes; i-- > 1;)
		p->nodes[p->nodes[i].parent].total += p->nodes[i].total;
}

struct pyd_profile *pyd_profile_split(struct pyd_profile *p)
{
	struct pyd_profile *done = pyd_profile_new(p->lines, p->priv->max_nodes);
	for (size_t i = 0; done && i < p->nprocesses; i++) {
		const struct pyd_prof_process *pr = &p->processes[i];
		if (pyd_profile_process(done, pr->pid, pr->ppid, pr->cmdline,
		                        pr->python_version) != i) {
			pyd_profile_free(done);
			return NULL;
		}
		done->processes[i].exited = pr->exited;
	}
	if (!done)
		return NULL;
	/* The samplers hold p: it takes the fresh state, done the counts. */
	struct pyd_profile fresh = *done;
	*done = *p;
	*p = fresh;
	p->by_process = done->by_process;
	p->on_sample = done->on_sample;
	p->on_sample_ctx = done->on_sample_ctx;
	done->on_sample = NULL;
	const struct pyd_prof_meta *m = &done->meta;
	p->meta = (struct pyd_prof_meta){.pid = m->pid,
	                                 .python_version = m->python_version,
	                                 .mode = m->mode,
	                                 .rate_hz = m->rate_hz};
	/* A version that pointed into the processes now points into p's. */
	for (size_t i = 0; i < p->nprocesses; i++)
		if (m->python_version == done->processes[i].python_version)
			p->meta.python_version = p->processes[i].python_version;
	return done;
}

/*
 * A finished copy of p's threads of process proc (PYD_PROF_NONE: all),
 * the idle ones left out if active, each process's threads folded into
 * one if merge.  Frames keep their indexes; nodes are re-added under
 * their copied parents.
 */
static struct pyd_profile *copy_profile(const struct pyd_profile *p,
                                        uint32_t proc, bool active, bool merge)
{
	struct pyd_profile *m = pyd_profile_new(p->lines, p->priv->max_nodes);
	uint32_t *map = malloc((p->nnodes ? p->nnodes : 1) * sizeof *map);
	bool ok = m && map;
	for (size_t i = 0; ok && i < p->nprocesses; i++) {
		const struct pyd_prof_process *pr = &p->processes[i];
		ok = pyd_profile_process(m, pr->pid, pr->ppid, pr->cmdline,
		                         pr->python_version) == i;
		if (ok) {
			m->processes[i].exited = pr->exited;
			m->processes[i].idle_threads = pr->idle_threads;
			m->processes[i].idle_samples = pr->idle_samples;
		}
	}
	for (size_t i = 0; ok && i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		struct pyd_prof_frame c = *f;
		c.function = intern(m->priv, f->function);
		c.qualname = intern(m->priv, f->qualname);
		c.file = intern(m->priv, f->file);
		ok = frame_index(m, &c) == i;
	}
	if (ok)
		map[0] = 0;
	for (size_t i = 0; ok && i < p->nthreads; i++) {
		const struct pyd_prof_thread *t = &p->threads[i];
		map[t->node] = PYD_PROF_NONE;
		if (proc != PYD_PROF_NONE && t->process != proc)
			continue;
		if (active && pyd_prof_thread_idle(t)) {
			m->processes[t->process].idle_threads++;
			m->processes[t->process].idle_samples +=
			    p->nodes[t->node].total;
			continue;
		}
		size_t had = m->nthreads;
		size_t ti = merge ? thread_index(m, t->process, 0, "all threads")
		                  : thread_index(m, t->process, t->tid, t->name);
		ok = ti != SIZE_MAX;
		if (!ok)
			break;
		map[t->node] = m->threads[ti].node;
		m->threads[ti].watched |= t->watched;
		m->threads[ti].ran |= t->ran;
		m->threads[ti].folded =
		    (ti < had ? m->threads[ti].folded : 0) + t->folded;
		m->threads_merged += t->folded;
	}
	for (size_t i = 1; ok && i < p->nnodes; i++) {
		const struct pyd_prof_node *n = &p->nodes[i];
		if (n->frame == PYD_PROF_NONE)
			continue; /* a thread's node, mapped above */
		if (map[n->parent] == PYD_PROF_NONE) {
			map[i] = PYD_PROF_NONE; /* another process's */
			continue;
		}
		map[i] = child(m, map[n->parent], n->frame);
		ok = map[i] != PYD_PROF_NONE;
		if (ok) {
			m->nodes[map[i]].self += n->self;
			m->nodes[map[i]].self_await += n->self_await;
		}
	}
	free(map);
	if (!ok) {
		pyd_profile_free(m);
		return NULL;
	}
	m->meta = p->meta;
	m->by_process = p->by_process;
	m->truncated = p->truncated || m->truncated;
	m->merged = merge || p->merged;
	m->gc = p->gc;
	pyd_profile_finish(m);
	return m;
}

struct pyd_profile *pyd_profile_view(const struct pyd_profile *p,
                                     uint32_t proc, bool active, bool merge)
{
	struct pyd_profile *m = copy_profile(p, proc, active, merge);
	if (m && proc < p->nprocesses) {
		m->meta.pid = p->processes[proc].pid;
		m->meta.python_version = p->processes[proc].python_version;
	}
	return m;
}
