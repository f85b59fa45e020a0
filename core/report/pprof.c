/*
 * pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
 * gzipped as pprof expects.  Every frame is one location holding one line
 * of its function; every tree node with a self count becomes a sample
 * (two in async mode: its running and its awaiting part), labelled with
 * its thread so that pprof -tagfocus can pick threads apart.
 *
 * The message is small enough to build in memory: each submessage is
 * encoded into a scratch buffer, then copied into its parent with its
 * length in front.  docs/profile-formats.md describes what is in it.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profiles.h"
#include "../grow.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static void put_varint(struct pyd_buf *b, uint64_t v)
{
	char out[10];
	size_t n = 0;
	do {
		out[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pyd_buf_put(b, out, n);
}

static void put_key(struct pyd_buf *b, unsigned field, unsigned wire)
{
	put_varint(b, field << 3 | wire);
}

/* proto3 leaves zero scalars out: decoders read them back as zero. */
static void put_int(struct pyd_buf *b, unsigned field, int64_t v)
{
	if (!v)
		return;
	put_key(b, field, WIRE_VARINT);
	put_varint(b, (uint64_t)v);
}

static void put_bytes(struct pyd_buf *b, unsigned field, const char *s,
                      size_t n)
{
	put_key(b, field, WIRE_LEN);
	put_varint(b, n);
	if (n)
		pyd_buf_put(b, s, n);
}

/* Copy the finished submessage in sub into b as field, and empty sub. */
static void put_message(struct pyd_buf *b, unsigned field, struct pyd_buf *sub)
{
	put_bytes(b, field, sub->data, sub->len);
	b->failed |= sub->failed;
	sub->len = 0;
}

/*
 * The string table: every string is stored once and referred to by its
 * index.  Open addressing on FNV-1a; slots hold index + 1, 0 when free.
 */
struct strtab {
	char **strs;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots; /* a power of two, at least twice n */
	bool failed;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3u;
	return h;
}

static uint32_t *strtab_slot(struct strtab *t, const char *s)
{
	size_t mask = t->nslots - 1;
	for (size_t i = fnv1a(s) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &t->slots[i];
		if (!*slot || strcmp(t->strs[*slot - 1], s) == 0)
			return slot;
	}
}

static bool strtab_grow(struct strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	char **strs = realloc(t->strs, cap * sizeof *strs);
	if (!strs)
		return false;
	t->strs = strs;
	t->cap = cap;
	uint32_t *slots = calloc(cap * 2, sizeof *slots);
	if (!slots)
		return false;
	free(t->slots);
	t->slots = slots;
	t->nslots = cap * 2;
	for (size_t i = 0; i < t->n; i++)
		*strtab_slot(t, t->strs[i]) = (uint32_t)i + 1;
	return true;
}

/* The index of s, added if new; 0 (the empty string) if out of memory. */
static int64_t intern(struct strtab *t, const char *s)
{
	if (t->failed)
		return 0;
	if (t->n == t->cap && !strtab_grow(t)) {
		t->failed = true;
		return 0;
	}
	uint32_t *slot = strtab_slot(t, s);
	if (*slot)
		return *slot - 1;
	char *copy = strdup(s);
	if (!copy) {
		t->failed = true;
		return 0;
	}
	t->strs[t->n++] = copy;
	*slot = (uint32_t)t->n;
	return *slot - 1;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->slots);
}

/* pprof's view of one frame, as string table indices. */
struct pp_func {
	int64_t name, system_name, filename;
	uint32_t frame;
	uint64_t id; /* shared by the frames of one function */
};

struct pp {
	const struct pyd_profile *p;
	struct pyd_buf out; /* the Profile message, before gzip */
	struct pyd_buf msg; /* a message of the profile being encoded */
	struct pyd_buf sub; /* a message inside msg */
	struct strtab st;
	struct pp_func *funcs; /* one per frame, then sorted by name */
	uint64_t *func_of;     /* by frame: its function's id */
	uint64_t *path;        /* location ids, outermost first */
	size_t pathcap;
	/* by depth of path: the innermost task (or greenlet) there, its
	 * name's string id; 0 outside any */
	int64_t *task_at;
	size_t taskcap;
	int64_t period_ns;
	int64_t key_thread, key_tid, key_process, key_pid, key_state, key_task,
	    running, awaiting;
	bool failed;
};

static int64_t intern_task(struct pp *e, const char *name)
{
	size_t n = strlen(name) + sizeof "<task >";
	char *s = malloc(n);
	if (!s) {
		e->failed = true;
		return 0;
	}
	int64_t i = intern(&e->st, pyd_task_label(name, s, n));
	free(s);
	return i;
}

static int cmp_func(const void *a, const void *b)
{
	const struct pp_func *x = a, *y = b;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->system_name != y->system_name)
		return x->system_name < y->system_name ? -1 : 1;
	if (x->filename != y->filename)
		return x->filename < y->filename ? -1 : 1;
	return 0;
}

/*
 * With line numbers on, one function is several frames (one per line);
 * pprof wants it once, so frames are grouped by name and file.
 */
static bool build_functions(struct pp *e)
{
	const struct pyd_profile *p = e->p;
	e->funcs = calloc(p->nframes ? p->nframes : 1, sizeof *e->funcs);
	e->func_of = calloc(p->nframes ? p->nframes : 1, sizeof *e->func_of);
	if (!e->funcs || !e->func_of)
		return false;
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		struct pp_func *fn = &e->funcs[i];
		fn->frame = (uint32_t)i;
		if (f->kind == PYD_PF_TASK) {
			fn->name = intern_task(e, f->function);
			fn->system_name = intern(&e->st, f->function);
			continue;
		}
		fn->name =
		    intern(&e->st, f->qualname ? f->qualname : f->function);
		fn->filename = intern(&e->st, f->file ? f->file : "");
		/* A system name equal to the name makes pprof demangle it as
		 * C++, which strips "<module>" and "<lambda>" to nothing. */
		fn->system_name = intern(&e->st, f->function);
		if (fn->system_name == fn->name)
			fn->system_name = 0;
	}
	qsort(e->funcs, p->nframes, sizeof *e->funcs, cmp_func);
	uint64_t id = 0;
	for (size_t i = 0; i < p->nframes; i++) {
		if (!i || cmp_func(&e->funcs[i - 1], &e->funcs[i]))
			id++;
		e->funcs[i].id = id;
		e->func_of[e->funcs[i].frame] = id;
	}
	return true;
}

static void put_functions(struct pp *e)
{
	for (size_t i = 0; i < e->p->nframes; i++) {
		const struct pp_func *fn = &e->funcs[i];
		if (i && fn->id == e->funcs[i - 1].id)
			continue;
		put_int(&e->msg, FUNCTION_ID, (int64_t)fn->id);
		put_int(&e->msg, FUNCTION_NAME, fn->name);
		put_int(&e->msg, FUNCTION_SYSTEM_NAME, fn->system_name);
		put_int(&e->msg, FUNCTION_FILENAME, fn->filename);
		put_message(&e->out, PROFILE_FUNCTION, &e->msg);
	}
}

/*
 * Every location is in the one mapping, which says the locations carry
 * their functions: without it pprof tries to symbolize them from a binary.
 */
static void put_mapping(struct pp *e)
{
	put_int(&e->msg, MAPPING_ID, 1);
	put_int(&e->msg, MAPPING_HAS_FUNCTIONS, 1);
	put_int(&e->msg, MAPPING_HAS_FILENAMES, 1);
	put_int(&e->msg, MAPPING_HAS_LINE_NUMBERS, e->p->lines);
	put_message(&e->out, PROFILE_MAPPING, &e->msg);
}

/* Location i + 1 is frame i. */
static void put_locations(struct pp *e)
{
	for (size_t i = 0; i < e->p->nframes; i++) {
		int line = e->p->frames[i].line;
		put_int(&e->sub, LINE_FUNCTION_ID, (int64_t)e->func_of[i]);
		put_int(&e->sub, LINE_LINE, line > 0 ? line : 0);
		put_int(&e->msg, LOCATION_ID, (int64_t)i + 1);
		put_int(&e->msg, LOCATION_MAPPING_ID, 1);
		put_message(&e->msg, LOCATION_LINE, &e->sub);
		put_message(&e->out, PROFILE_LOCATION, &e->msg);
	}
}

static void put_value_type(struct pp *e, unsigned field, const char *type,
                           const char *unit)
{
	put_int(&e->msg, VALUE_TYPE_TYPE, intern(&e->st, type));
	put_int(&e->msg, VALUE_TYPE_UNIT, intern(&e->st, unit));
	put_message(&e->out, field, &e->msg);
}

static void put_str_label(struct pp *e, int64_t key, int64_t str)
{
	put_int(&e->sub, LABEL_KEY, key);
	put_int(&e->sub, LABEL_STR, str);
	put_message(&e->msg, SAMPLE_LABEL, &e->sub);
}

static void put_num_label(struct pp *e, int64_t key, int64_t num)
{
	put_int(&e->sub, LABEL_KEY, key);
	put_int(&e->sub, LABEL_NUM, num);
	put_message(&e->msg, SAMPLE_LABEL, &e->sub);
}

/* The thread whose samples are being written. */
struct pp_thread {
	int64_t name, tid;
	int64_t process, pid; /* its process's label (a string) and pid */
};

/* count samples of the stack path[0..depth), state a string index or 0. */
static void put_sample(struct pp *e, const struct pp_thread *t, size_t depth,
                       uint64_t count, int64_t state)
{
	for (size_t i = depth; i-- > 0;)
		put_varint(&e->sub, e->path[i]);
	put_message(&e->msg, SAMPLE_LOCATION_ID, &e->sub);
	put_varint(&e->sub, count);
	put_varint(&e->sub, count * (uint64_t)e->period_ns);
	put_message(&e->msg, SAMPLE_VALUE, &e->sub);
	if (!e->p->merged) {
		put_str_label(e, e->key_thread, t->name);
		put_num_label(e, e->key_tid, t->tid);
	}
	if (e->p->by_process) {
		put_str_label(e, e->key_process, t->process);
		put_num_label(e, e->key_pid, t->pid);
	}
	if (state)
		put_str_label(e, e->key_state, state);
	if (e->task_at[depth - 1])
		put_str_label(e, e->key_task, e->task_at[depth - 1]);
	put_message(&e->out, PROFILE_SAMPLE, &e->msg);
}

static void put_node_samples(struct pp *e, const struct pp_thread *t,
                             const struct pyd_prof_node *n, size_t depth)
{
	if (!pyd_sample_mode(e->p->meta.mode)->unit) {
		if (n->self)
			put_sample(e, t, depth, n->self, 0);
		return;
	}
	if (n->self > n->self_await)
		put_sample(e, t, depth, n->self - n->self_await, e->running);
	if (n->self_await)
		put_sample(e, t, depth, n->self_await, e->awaiting);
}

static bool path_reserve(struct pp *e, size_t depth)
{
	return pyd_grow((void **)&e->path, &e->pathcap, depth + 1,
			sizeof *e->path) &&
	       pyd_grow((void **)&e->task_at, &e->taskcap, depth + 1,
	                sizeof *e->task_at);
}

static int64_t thread_name(struct pp *e, const struct pyd_prof_thread *th)
{
	char buf[32];
	if (th->name[0])
		return intern(&e->st, th->name);
	snprintf(buf, sizeof buf, "thread %lld", (long long)th->tid);
	return intern(&e->st, buf);
}

/* The task a frame at depth runs in: itself if it is a task boundary,
 * else its caller's. */
static int64_t task_at(struct pp *e, uint32_t frame, size_t depth)
{
	const struct pyd_prof_frame *f = &e->p->frames[frame];
	if (f->kind == PYD_PF_TASK)
		return intern(&e->st, f->function); /* its system name's */
	return depth > 1 ? e->task_at[depth - 2] : 0;
}

/* Depth first through the thread's tree, keeping the path from its top. */
static void put_thread(struct pp *e, const struct pyd_prof_thread *th)
{
	const struct pyd_prof_node *nodes = e->p->nodes;
	char proc[384];
	struct pp_thread t = {thread_name(e, th), th->tid, 0,
	                      e->p->processes[th->process].pid};
	if (e->p->by_process)
		t.process = intern(&e->st, pyd_prof_process_label(
		                               e->p, th->process, proc, sizeof proc));
	struct pyd_prof_walk w;
	uint32_t n;

	/* Samples of no Python frame at all (counted on top) are left out,
	 * as in the collapsed report: pprof would count them in its totals
	 * but show them nowhere. */
	for (pyd_prof_walk_start(&w, e->p, th->node);
	     pyd_prof_walk_next(&w, &n);) {
		if (!path_reserve(e, w.depth - 1)) {
			e->failed = true;
			return;
		}
		e->path[w.depth - 1] = (uint64_t)nodes[n].frame + 1;
		e->task_at[w.depth - 1] = task_at(e, nodes[n].frame, w.depth);
		put_node_samples(e, &t, &nodes[n], w.depth);
	}
}

/* What pprof -comments shows: where the profile came from. */
static void put_comments(struct pp *e)
{
	const struct pyd_prof_meta *m = &e->p->meta;
	char buf[256];
	snprintf(buf, sizeof buf,
	         "pystack-dump: pid %d, Python %s, %s mode, %llu samples, "
	         "%llu errors, %llu missed ticks",
	         m->pid, m->python_version ? m->python_version : "unknown",
	         pyd_sample_mode_name(m->mode), (unsigned long long)m->samples,
	         (unsigned long long)m->errors, (unsigned long long)m->missed);
	put_int(&e->out, PROFILE_COMMENT, intern(&e->st, buf));
	if (e->p->truncated)
		put_int(&e->out, PROFILE_COMMENT,
		        intern(&e->st,
		               "the node limit was hit: deeper "
		               "frames were folded into their callers"));
}

/* Seconds as nanoseconds; 0 for what no int64 holds (a profile read from
 * a file may say anything, and converting that is undefined). */
static int64_t nanos(double s)
{
	double ns = s * 1e9 + 0.5;
	return ns >= 0 && ns < 0x1p63 ? (int64_t)ns : 0;
}

/*
 * Two values per sample: the count, and the time it stands for.  Async
 * samples stand for wall time too; the others for the time of their mode.
 */
static void put_header(struct pp *e)
{
	const struct pyd_prof_meta *m = &e->p->meta;
	const char *type = pyd_sample_mode(m->mode)->unit
	                       ? "wall"
	                       : pyd_sample_mode_name(m->mode);
	e->period_ns = nanos(m->interval_s);
	put_value_type(e, PROFILE_SAMPLE_TYPE, "samples", "count");
	put_value_type(e, PROFILE_SAMPLE_TYPE, type, "nanoseconds");
	put_int(&e->out, PROFILE_DEFAULT_SAMPLE_TYPE, intern(&e->st, type));
	put_value_type(e, PROFILE_PERIOD_TYPE, type, "nanoseconds");
	put_int(&e->out, PROFILE_PERIOD, e->period_ns);
	put_int(&e->out, PROFILE_TIME_NANOS,
	        m->start_unix_us < INT64_MAX / 1000
	            ? (int64_t)m->start_unix_us * 1000
	            : 0);
	put_int(&e->out, PROFILE_DURATION_NANOS, nanos(m->duration_s));
	put_comments(e);
	e->key_thread = intern(&e->st, "thread");
	e->key_tid = intern(&e->st, "thread id");
	if (e->p->by_process) {
		e->key_process = intern(&e->st, "process");
		e->key_pid = intern(&e->st, "pid");
	}
	e->key_state = intern(&e->st, "state");
	const char *unit = pyd_sample_mode(m->mode)->unit;
	e->key_task = intern(&e->st, unit ? unit : "task");
	e->running = intern(&e->st, "running");
	e->awaiting = intern(&e->st, "awaiting");
}

/* Last, once everything else has added its strings. */
static void put_string_table(struct pp *e)
{
	for (size_t i = 0; i < e->st.n; i++)
		put_bytes(&e->out, PROFILE_STRING_TABLE, e->st.strs[i],
		          strlen(e->st.strs[i]));
}

static void gzip_into(struct pyd_buf *b, const char *data, size_t len)
{
	z_stream zs = {0};
	char chunk[16384];
	int flush;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
	                 Z_DEFAULT_STRATEGY) != Z_OK) {
		b->failed = true;
		return;
	}
	do {
		size_t take = len < UINT_MAX ? len : UINT_MAX;
		zs.next_in = (Bytef *)data;
		zs.avail_in = (uInt)take;
		data += take;
		len -= take;
		flush = len ? Z_NO_FLUSH : Z_FINISH;
		do {
			zs.next_out = (Bytef *)chunk;
			zs.avail_out = sizeof chunk;
			if (deflate(&zs, flush) == Z_STREAM_ERROR)
				b->failed = true;
			pyd_buf_put(b, chunk, sizeof chunk - zs.avail_out);
		} while (zs.avail_out == 0);
	} while (flush != Z_FINISH);
	deflateEnd(&zs);
}

void pyd_report_prof_pprof(struct pyd_buf *b, const struct pyd_profile *p,
                           size_t limit)
{
	(void)limit;
	struct pp e = {.p = p};

	intern(&e.st, "");
	put_header(&e);
	if (!build_functions(&e))
		e.failed = true;
	else {
		put_functions(&e);
		put_mapping(&e);
		put_locations(&e);
		for (size_t i = 0; i < p->nthreads && !e.failed; i++)
			put_thread(&e, &p->threads[i]);
	}
	put_string_table(&e);
	if (e.failed || e.st.failed || e.out.failed || e.msg.failed ||
	    e.sub.failed)
		b->failed = true;
	else
		gzip_into(b, e.out.data, e.out.len);
	strtab_free(&e.st);
	free(e.funcs);
	free(e.func_of);
	free(e.path);
	free(e.task_at);
	pyd_buf_free(&e.out);
	pyd_buf_free(&e.msg);
	pyd_buf_free(&e.sub);
}
