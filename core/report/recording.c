/*
 * Recordings (-f raw): every sample with its time, thread and stack, as
 * ids into tables of strings, frames, threads and processes that are
 * defined the first time they appear; written (pyd_stream_raw) and read
 * back into a profile (pyd_replay).  docs/recording-format.md is the
 * format: keep the two in step.
 *
 * The writer's ids are the profile's own indexes (frames, threads,
 * processes are only ever appended), so defining what is new is writing
 * what the profile holds past what was written; strings, interned by the
 * profile, are numbered by address.  A sample gives only the frames that
 * differ from its thread's previous sample (pyd_prof_sample.kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../grow.h"
#include "stream.h"
#include "read.h"

#define MAGIC       "PYDREC"
#define VERSION     1
#define MAX_STRING  65536 /* bytes of one string a reader takes */
#define WINDOW      (256 * 1024) /* decoded bytes a reader asks for */

enum record {
	R_HEAD = 'H',
	R_PROCESS = 'P',
	R_STRING = 'S',
	R_FRAME = 'F',
	R_THREAD = 'T',
	R_NAME = 'N',
	R_SAMPLE = 'X',
	R_END = 'E',
};

enum { F_LINES = 1, F_BY_PROCESS = 2 };

/* ---- writing ---- */

struct strid {
	const char *s; /* interned by the profile: one address a string */
	uint32_t id;
};

struct rec {
	struct strid *ids; /* open addressing, s NULL: empty */
	size_t ids_cap, nstrs;
	size_t nprocesses, nframes, nthreads; /* defined so far */
	bool *named;                          /* per thread */
	size_t named_cap;
	uint64_t last_us, last_tick; /* of the previous sample */
};

static void put_u(struct pyd_buf *b, uint64_t v)
{
	char t[10];
	size_t n = 0;
	do {
		t[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pyd_buf_put(b, t, n);
}

/* zigzag: small negative numbers stay short */
static void put_i(struct pyd_buf *b, int64_t v)
{
	put_u(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_s(struct pyd_buf *b, const char *s)
{
	size_t n = strlen(s);
	put_u(b, n);
	pyd_buf_put(b, s, n);
}

static void put_c(struct pyd_buf *b, char c)
{
	pyd_buf_put(b, &c, 1);
}

static void *rec_open(void)
{
	return calloc(1, sizeof(struct rec));
}

static void rec_close(void *st)
{
	struct rec *w = st;
	free(w->ids);
	free(w->named);
	free(w);
}

static size_t slot(const struct strid *t, size_t cap, const char *s)
{
	size_t j = ((uintptr_t)s >> 4) * 0x9e3779b97f4a7c15ULL & (cap - 1);
	while (t[j].s && t[j].s != s)
		j = (j + 1) & (cap - 1);
	return j;
}

static bool grow_ids(struct rec *w)
{
	if ((w->nstrs + 1) * 2 <= w->ids_cap)
		return true;
	size_t cap = w->ids_cap ? w->ids_cap * 2 : 1024;
	struct strid *t = calloc(cap, sizeof *t);
	if (!t)
		return false;
	for (size_t i = 0; i < w->ids_cap; i++)
		if (w->ids[i].s)
			t[slot(t, cap, w->ids[i].s)] = w->ids[i];
	free(w->ids);
	w->ids = t;
	w->ids_cap = cap;
	return true;
}

/* s's id + 1, defining it if new; 0 for NULL (and out of memory, which
 * the buffer then says too). */
static uint64_t string_id(struct pyd_buf *b, struct rec *w, const char *s)
{
	if (!s)
		return 0;
	if (!grow_ids(w)) {
		b->failed = true;
		return 0;
	}
	struct strid *e = &w->ids[slot(w->ids, w->ids_cap, s)];
	if (!e->s) {
		*e = (struct strid){s, (uint32_t)w->nstrs++};
		put_c(b, R_STRING);
		put_s(b, s);
	}
	return e->id + 1u;
}

static void define_frame(struct pyd_buf *b, struct rec *w,
                         const struct pyd_prof_frame *f)
{
	uint64_t fn = string_id(b, w, f->function);
	uint64_t qn = string_id(b, w, f->qualname);
	uint64_t file = string_id(b, w, f->file);
	put_c(b, R_FRAME);
	put_u(b, fn - 1);
	put_u(b, qn);
	put_u(b, file);
	put_i(b, f->line);
	put_i(b, f->firstline);
	put_u(b, f->kind);
}

static void define_thread(struct pyd_buf *b, struct rec *w,
                          const struct pyd_prof_thread *t)
{
	if (!pyd_grow((void **)&w->named, &w->named_cap, w->nthreads + 1,
	              sizeof *w->named)) {
		b->failed = true;
		return;
	}
	put_c(b, R_THREAD);
	put_u(b, t->process);
	put_i(b, t->tid);
	put_s(b, t->name);
	w->named[w->nthreads++] = t->name[0] != 0;
}

/* What p holds that the recording does not yet. */
static void define_new(struct pyd_buf *b, const struct pyd_profile *p,
                       struct rec *w)
{
	for (; w->nprocesses < p->nprocesses; w->nprocesses++) {
		const struct pyd_prof_process *pr = &p->processes[w->nprocesses];
		put_c(b, R_PROCESS);
		put_u(b, (uint64_t)pr->pid);
		put_u(b, (uint64_t)pr->ppid);
		put_s(b, pr->cmdline);
		put_s(b, pr->python_version);
	}
	for (; w->nframes < p->nframes; w->nframes++)
		define_frame(b, w, &p->frames[w->nframes]);
	while (w->nthreads < p->nthreads && !b->failed)
		define_thread(b, w, &p->threads[w->nthreads]);
}

static void rec_head(struct pyd_buf *b, const struct pyd_profile *p,
                     void *st)
{
	(void)st;
	const struct pyd_prof_meta *m = &p->meta;
	pyd_buf_put(b, MAGIC, strlen(MAGIC));
	put_u(b, VERSION);
	put_c(b, R_HEAD);
	put_u(b, m->start_unix_us);
	put_u(b, (uint64_t)m->pid);
	put_u(b, m->mode);
	put_u(b, (uint64_t)(m->rate_hz * 1000 + 0.5));
	put_u(b, (p->lines ? F_LINES : 0) | (p->by_process ? F_BY_PROCESS : 0));
}

static void rec_sample(struct pyd_buf *b, const struct pyd_profile *p,
                       const struct pyd_prof_sample *x, void *st)
{
	struct rec *w = st;
	define_new(b, p, w);
	if (b->failed)
		return;
	const struct pyd_prof_thread *t = &p->threads[x->thread];
	/* The sampler names a thread once it has read its name. */
	if (!w->named[x->thread] && t->name[0]) {
		put_c(b, R_NAME);
		put_u(b, x->thread);
		put_s(b, t->name);
		w->named[x->thread] = true;
	}
	const struct pyd_prof_meta *m = &p->meta;
	put_c(b, R_SAMPLE);
	put_u(b, m->round_us - w->last_us);
	put_u(b, m->ticks - w->last_tick);
	put_u(b, x->thread);
	put_u(b, x->awaiting);
	put_u(b, x->kept);
	put_u(b, x->n - x->kept);
	for (size_t i = x->kept; i < x->n; i++)
		put_u(b, x->frames[i]);
	w->last_us = m->round_us;
	w->last_tick = m->ticks;
}

static void rec_tail(struct pyd_buf *b, const struct pyd_profile *p,
                     void *st)
{
	define_new(b, p, st);
	const struct pyd_prof_meta *m = &p->meta;
	put_c(b, R_END);
	put_u(b, m->ticks);
	put_u(b, m->errors);
	put_u(b, m->missed);
	put_u(b, m->reads);
	put_u(b, (uint64_t)(m->duration_s * 1e6 + 0.5));
	size_t exited = 0;
	for (size_t i = 0; i < p->nprocesses; i++)
		exited += p->processes[i].exited;
	put_u(b, exited);
	for (size_t i = 0; i < p->nprocesses; i++)
		if (p->processes[i].exited)
			put_u(b, i);
}

const struct pyd_stream_writer pyd_stream_raw = {
    .compressed = true,
    .flush_us = 1000000,
    .open = rec_open,
    .head = rec_head,
    .sample = rec_sample,
    .tail = rec_tail,
    .close = rec_close,
};

/* ---- reading ---- */

/* A record being parsed: running out of bytes is no error (more may
 * come), bytes that make no sense are. */
struct cur {
	const uint8_t *p, *end;
	enum { C_OK, C_SHORT, C_BAD } state;
	const char *why; /* C_BAD */
};

static uint64_t get_u(struct cur *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0; c->state == C_OK; shift += 7) {
		if (c->p == c->end) {
			c->state = C_SHORT;
			break;
		}
		if (shift > 63) {
			c->state = C_BAD;
			c->why = "a number longer than 64 bits";
			break;
		}
		uint8_t byte = *c->p++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
	return 0;
}

static int64_t get_i(struct cur *c)
{
	uint64_t v = get_u(c);
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static bool bad(struct cur *c, const char *why)
{
	if (c->state == C_OK) {
		c->state = C_BAD;
		c->why = why;
	}
	return false;
}

/* A value below limit (the ids defined so far). */
static uint64_t get_id(struct cur *c, uint64_t limit, const char *what)
{
	uint64_t v = get_u(c);
	if (c->state == C_OK && v >= limit)
		bad(c, what);
	return v;
}

/* A string of at most max bytes, copied (NUL-terminated) into a fresh
 * allocation; NULL unless c is still good. */
static char *get_s(struct cur *c, size_t max)
{
	uint64_t n = get_u(c);
	if (c->state != C_OK)
		return NULL;
	if (n > max) {
		bad(c, "a string too long");
		return NULL;
	}
	if ((uint64_t)(c->end - c->p) < n) {
		c->state = C_SHORT;
		return NULL;
	}
	char *s = malloc(n + 1);
	if (!s) {
		bad(c, "out of memory");
		return NULL;
	}
	memcpy(s, c->p, n);
	s[n] = 0;
	c->p += n;
	return s;
}

struct rthread {
	uint32_t process;
	int64_t tid;
	char name[64];
	uint32_t *stack; /* the previous sample's frames, outermost first */
	size_t n, cap;
};

struct reader {
	struct pyd_profile *p;
	struct pyd_replay *r;
	/* the file, and its decoded bytes not yet parsed */
	const uint8_t *in;
	size_t inlen, inpos;
	ZSTD_DCtx *z;
	size_t zret; /* 0: the last frame decoded was whole */
	uint8_t *dec;
	size_t pos, len, cap;
	uint64_t parsed; /* decoded bytes parsed before dec[0] */
	/* the tables */
	char **strs;
	size_t nstrs, strs_cap;
	struct pyd_frame *frames;
	size_t nframes, frames_cap;
	struct rthread *threads;
	size_t nthreads, threads_cap;
	size_t nprocesses;
	struct pyd_frame *fb; /* a sample's frames, innermost first */
	size_t fb_cap;
	bool headed;
	/* the samples: the time and round of the last one read, and of the
	 * first and last in the slice */
	uint64_t us, tick, first_us, first_tick, last_us, last_tick;
	uint64_t fed, awaiting;
	/* the end record */
	uint64_t ticks, errors, missed, reads, duration_us;
};

static bool read_head(struct reader *rd, struct cur *c)
{
	struct pyd_prof_meta *m = &rd->p->meta;
	m->start_unix_us = get_u(c);
	m->pid = (int)get_u(c);
	uint64_t mode = get_u(c);
	m->rate_hz = (double)get_u(c) / 1000;
	uint64_t flags = get_u(c);
	if (c->state != C_OK)
		return false;
	if (mode >= PYD_SAMPLE_MODES)
		return bad(c, "an unknown sampling mode");
	m->mode = (enum pyd_sample_mode)mode;
	rd->p->lines &= (flags & F_LINES) != 0;
	rd->p->by_process = (flags & F_BY_PROCESS) != 0;
	return (rd->headed = true);
}

static bool read_process(struct reader *rd, struct cur *c)
{
	int pid = (int)get_u(c), ppid = (int)get_u(c);
	char *cmdline = get_s(c, MAX_STRING), *version = get_s(c, MAX_STRING);
	bool ok = c->state == C_OK;
	if (ok && pyd_profile_process(rd->p, pid, ppid, cmdline, version) !=
	              rd->nprocesses)
		ok = bad(c, "out of memory");
	free(cmdline);
	free(version);
	rd->nprocesses += ok;
	return ok;
}

static bool read_string(struct reader *rd, struct cur *c)
{
	char *s = get_s(c, MAX_STRING);
	if (!s)
		return false;
	if (!pyd_grow((void **)&rd->strs, &rd->strs_cap, rd->nstrs + 1,
	              sizeof *rd->strs)) {
		free(s);
		return bad(c, "out of memory");
	}
	rd->strs[rd->nstrs++] = s;
	return true;
}

/* A string id + 1, 0 for none. */
static const char *get_str(struct reader *rd, struct cur *c)
{
	uint64_t id = get_id(c, rd->nstrs + 1, "a string not defined");
	return c->state == C_OK && id ? rd->strs[id - 1] : NULL;
}

static bool read_frame(struct reader *rd, struct cur *c)
{
	uint64_t fn = get_id(c, rd->nstrs, "a string not defined");
	const char *qualname = get_str(rd, c), *file = get_str(rd, c);
	int64_t line = get_i(c), firstline = get_i(c);
	uint64_t kind = get_u(c);
	if (c->state != C_OK)
		return false;
	if (kind > PYD_PF_ELIDED)
		return bad(c, "an unknown kind of frame");
	if (!pyd_grow((void **)&rd->frames, &rd->frames_cap, rd->nframes + 1,
	              sizeof *rd->frames))
		return bad(c, "out of memory");
	rd->frames[rd->nframes++] = (struct pyd_frame){
	    .function = rd->strs[fn],
	    .qualname = qualname,
	    .file = kind == PYD_PF_PYTHON ? file : NULL,
	    .line = (int)line,
	    .firstline = (int)firstline,
	    .elided = kind == PYD_PF_ELIDED,
	};
	return true;
}

static bool read_thread(struct reader *rd, struct cur *c)
{
	uint64_t process = get_id(c, rd->nprocesses, "a process not defined");
	int64_t tid = get_i(c);
	char *name = get_s(c, MAX_STRING);
	if (!name)
		return false;
	if (!pyd_grow((void **)&rd->threads, &rd->threads_cap,
	              rd->nthreads + 1, sizeof *rd->threads)) {
		free(name);
		return bad(c, "out of memory");
	}
	struct rthread *t = &rd->threads[rd->nthreads++];
	*t = (struct rthread){.process = (uint32_t)process, .tid = tid};
	snprintf(t->name, sizeof t->name, "%s", name);
	free(name);
	return true;
}

static bool read_name(struct reader *rd, struct cur *c)
{
	uint64_t t = get_id(c, rd->nthreads, "a thread not defined");
	char *name = get_s(c, MAX_STRING);
	if (!name)
		return false;
	snprintf(rd->threads[t].name, sizeof rd->threads[t].name, "%s", name);
	free(name);
	return true;
}

static bool in_slice(const struct reader *rd)
{
	double t = (double)rd->us / 1e6;
	return t >= rd->r->from_s && (rd->r->to_s <= 0 || t <= rd->r->to_s);
}

/* Thread t's stack, innermost first, into the profile. */
static bool feed(struct reader *rd, struct cur *c, struct rthread *t,
                 bool awaiting)
{
	if (!pyd_grow((void **)&rd->fb, &rd->fb_cap, t->n, sizeof *rd->fb))
		return bad(c, "out of memory");
	for (size_t i = 0; i < t->n; i++)
		rd->fb[t->n - 1 - i] = rd->frames[t->stack[i]];
	rd->p->meta.round_us = rd->us;
	if (pyd_profile_add(rd->p, t->process, t->tid, t->name, rd->fb, t->n,
	                    awaiting))
		return bad(c, "out of memory");
	if (!rd->fed++) {
		rd->first_us = rd->us;
		rd->first_tick = rd->tick;
	}
	rd->last_us = rd->us;
	rd->last_tick = rd->tick;
	rd->awaiting += awaiting;
	return true;
}

static bool read_sample(struct reader *rd, struct cur *c)
{
	uint64_t dt = get_u(c), dtick = get_u(c);
	uint64_t ti = get_id(c, rd->nthreads, "a thread not defined");
	uint64_t flags = get_u(c);
	struct rthread *t = c->state == C_OK ? &rd->threads[ti] : NULL;
	uint64_t kept = get_id(c, t ? t->n + 1 : 0, "frames kept that were not");
	uint64_t n = get_id(c, PYD_MAX_FRAMES + 2 - kept, "a stack too deep");
	if (c->state != C_OK)
		return false;
	if (!pyd_grow((void **)&t->stack, &t->cap, kept + n, sizeof *t->stack))
		return bad(c, "out of memory");
	/* Past kept, the previous stack is not needed even if the record
	 * turns out short and is read again; its length changes only once
	 * it is whole. */
	uint32_t *at = t->stack + kept;
	for (uint64_t i = 0; i < n && c->state == C_OK; i++)
		at[i] = (uint32_t)get_id(c, rd->nframes, "a frame not defined");
	if (c->state != C_OK)
		return false;
	t->n = kept + n;
	rd->us += dt;
	rd->tick += dtick;
	return !in_slice(rd) || feed(rd, c, t, flags & 1);
}

static bool read_end(struct reader *rd, struct cur *c)
{
	rd->ticks = get_u(c);
	rd->errors = get_u(c);
	rd->missed = get_u(c);
	rd->reads = get_u(c);
	rd->duration_us = get_u(c);
	uint64_t exited = get_id(c, rd->nprocesses + 1, "too many processes");
	for (uint64_t i = 0; i < exited && c->state == C_OK; i++) {
		uint64_t proc = get_id(c, rd->nprocesses, "a process not defined");
		if (c->state == C_OK)
			rd->p->processes[proc].exited = true;
	}
	return c->state == C_OK && (rd->r->ended = true);
}

/* The magic and version that start the decoded bytes. */
static bool read_magic(struct cur *c)
{
	size_t n = strlen(MAGIC);
	if ((size_t)(c->end - c->p) < n) {
		c->state = C_SHORT;
		return false;
	}
	if (memcmp(c->p, MAGIC, n))
		return bad(c, "not a pystack-dump recording (a zstd file "
		              "that holds something else)");
	c->p += n;
	uint64_t v = get_u(c);
	if (c->state == C_OK && v != VERSION)
		return bad(c, v > VERSION ? "a recording of a newer format "
		                            "version than this pystack-dump "
		                            "reads"
		                          : "an unknown format version");
	return c->state == C_OK;
}

/* One record at c: false when short or bad (c->state says which). */
static bool read_record(struct reader *rd, struct cur *c)
{
	if (c->p == c->end) {
		c->state = C_SHORT;
		return false;
	}
	uint8_t type = *c->p++;
	if (!rd->headed && type != R_HEAD)
		return bad(c, "no header record");
	switch (type) {
	case R_HEAD:
		return rd->headed ? bad(c, "a second header")
		                  : read_head(rd, c);
	case R_PROCESS:
		return read_process(rd, c);
	case R_STRING:
		return read_string(rd, c);
	case R_FRAME:
		return read_frame(rd, c);
	case R_THREAD:
		return read_thread(rd, c);
	case R_NAME:
		return read_name(rd, c);
	case R_SAMPLE:
		return read_sample(rd, c);
	case R_END:
		return read_end(rd, c);
	}
	return bad(c, "an unknown record type");
}

/*
 * More decoded bytes after the unparsed ones: 1 if some came, 0 at the
 * end of the file, -1 if zstd found the file corrupt.
 */
static int decode_more(struct reader *rd)
{
	rd->parsed += rd->pos;
	memmove(rd->dec, rd->dec + rd->pos, rd->len - rd->pos);
	rd->len -= rd->pos;
	rd->pos = 0;
	/* A record longer than the window makes it grow. */
	if (!pyd_grow_from((void **)&rd->dec, &rd->cap, rd->len + WINDOW, 1,
	                   WINDOW))
		return -1;
	ZSTD_outBuffer o = {rd->dec + rd->len, rd->cap - rd->len, 0};
	do {
		ZSTD_inBuffer i = {rd->in, rd->inlen, rd->inpos};
		size_t ret = ZSTD_decompressStream(rd->z, &o, &i);
		if (ZSTD_isError(ret))
			return -1;
		bool progress = i.pos > rd->inpos || o.pos > 0;
		rd->inpos = i.pos;
		if (!progress)
			break;
		rd->zret = ret;
	} while (o.pos == 0);
	rd->len += o.pos;
	return o.pos > 0;
}

/* Every record; PYD_E_PROFILE with why for a corrupt one. */
static enum pyd_err read_all(struct reader *rd, char *detail, size_t detailsz)
{
	bool magic = false;
	/* The window exists before the first record is looked for: even
	 * NULL + 0 is undefined. */
	if (!pyd_grow_from((void **)&rd->dec, &rd->cap, WINDOW, 1, WINDOW)) {
		snprintf(detail, detailsz, "out of memory");
		return PYD_E_NOMEM;
	}
	for (;;) {
		struct cur c = {rd->dec + rd->pos, rd->dec + rd->len, C_OK, NULL};
		if (magic ? read_record(rd, &c) : (magic = read_magic(&c))) {
			rd->pos = (size_t)(c.p - rd->dec);
			continue;
		}
		if (c.state == C_BAD) {
			snprintf(detail, detailsz, "%s at byte %llu of its "
			         "decompressed records", c.why,
			         (unsigned long long)(rd->parsed + rd->pos));
			return PYD_E_PROFILE;
		}
		int more = decode_more(rd);
		if (more < 0) {
			snprintf(detail, detailsz, "its zstd data is corrupt "
			         "near byte %zu (the file was damaged)",
			         rd->inpos);
			return PYD_E_PROFILE;
		}
		if (!more)
			break;
	}
	rd->r->cut = rd->pos < rd->len || rd->zret != 0;
	if (!rd->headed) {
		snprintf(detail, detailsz, "%s", rd->r->cut
		         ? "it ends before its first record: nothing was "
		           "recorded"
		         : "no header record");
		return PYD_E_PROFILE;
	}
	return PYD_OK;
}

/* The run's counts: the end record's for the whole recording, else
 * (a slice, or a recording cut before its end) what the samples say. */
static void fill_meta(struct reader *rd)
{
	struct pyd_prof_meta *m = &rd->p->meta;
	const struct pyd_replay *r = rd->r;
	if (rd->p->nprocesses)
		m->python_version = rd->p->processes[0].python_version;
	m->samples = rd->fed;
	if (pyd_sample_mode(m->mode)->unit) {
		m->await_samples = rd->awaiting;
		m->cpu_samples = rd->fed - rd->awaiting;
	}
	if (r->ended && r->from_s <= 0 && r->to_s <= 0) {
		m->ticks = rd->ticks;
		m->errors = rd->errors;
		m->missed = rd->missed;
		m->reads = rd->reads;
		m->duration_s = (double)rd->duration_us / 1e6;
	} else if (rd->fed) {
		uint64_t rounds = rd->last_tick - rd->first_tick;
		double span = (double)(rd->last_us - rd->first_us) / 1e6;
		m->ticks = rounds + 1;
		/* the span and the round it ends with */
		m->duration_s = rounds ? span * (double)(rounds + 1) /
		                             (double)rounds
		                       : 0;
	}
	m->interval_s = m->ticks ? m->duration_s / (double)m->ticks : 0;
}

static void reader_free(struct reader *rd)
{
	for (size_t i = 0; i < rd->nstrs; i++)
		free(rd->strs[i]);
	for (size_t i = 0; i < rd->nthreads; i++)
		free(rd->threads[i].stack);
	free(rd->strs);
	free(rd->frames);
	free(rd->threads);
	free(rd->fb);
	free(rd->dec);
	ZSTD_freeDCtx(rd->z);
}

enum pyd_err pyd_replay(const void *data, size_t len, struct pyd_profile *p,
                        struct pyd_replay *r, char *detail, size_t detailsz)
{
	r->cut = r->ended = false;
	/* ZSTD_MAGICNUMBER, little-endian */
	if (len < 4 || memcmp(data, "\x28\xb5\x2f\xfd", 4)) {
		snprintf(detail, detailsz, "%s", len ? "not a pystack-dump "
		         "recording (no zstd frame at its start)"
		         : "empty: nothing was recorded");
		return PYD_E_PROFILE;
	}
	struct reader rd = {.p = p, .r = r, .in = data, .inlen = len};
	rd.z = ZSTD_createDCtx();
	enum pyd_err err = rd.z ? read_all(&rd, detail, detailsz)
	                        : PYD_E_NOMEM;
	if (rd.headed)
		fill_meta(&rd);
	reader_free(&rd);
	return err;
}

enum pyd_err pyd_read_prof_raw(char *text, size_t len,
                               struct pyd_profile **out, char *detail,
                               size_t detailsz)
{
	struct pyd_profile *p = pyd_profile_new(true, 0);
	if (!p)
		return PYD_E_NOMEM;
	struct pyd_replay r = {0};
	enum pyd_err err = pyd_replay(text, len, p, &r, detail, detailsz);
	if (err) {
		pyd_profile_free(p);
		return err;
	}
	pyd_profile_finish(p);
	*out = p;
	return PYD_OK;
}
