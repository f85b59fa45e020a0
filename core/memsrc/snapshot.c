/*
 * Snapshot files: recording any memory source, and replaying the file as
 * one.  The format is specified in docs/snapshot-format.md; keep the two
 * in step.
 */
#define _GNU_SOURCE
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../grow.h"
#include "layer.h"
#include "../pyd_runtime.h" /* the runtime record a snapshot keeps */

#ifndef PYD_VERSION
#define PYD_VERSION "dev"
#endif

#define SNAP_MAGIC	 "PYDSNAP\n"
#define SNAP_VERSION	 1u
#define SNAP_HEADER_SIZE 32u
/* A newer header may be longer, but not absurdly so. */
#define SNAP_HEADER_MAX 65536u
#define SNAP_CRC_OFFSET 24
/* type, flags, length before the payload; CRC after it. */
#define SECT_HEAD 16u
#define SECT_TAIL 4u
/* A reader that does not know the section type must refuse the file. */
#define SECT_CRITICAL 1u

enum sect_type {
	SECT_META = 1,
	SECT_RUNTIME = 2,
	SECT_MAPPINGS = 3,
	SECT_THREADS = 4,
	SECT_MEMORY = 5,
	SECT_NTYPES,
};

/* Smallest encoding of one entry, which caps a count by its payload. */
#define MAPPING_MIN 48u
#define THREAD_MIN  13u
#define RANGE_MIN   17u
/* Sanity caps on top: no real process has more. */
#define MAX_MAPPINGS (1u << 20)
#define MAX_THREADS  (1u << 20)
/* String fields, NUL included. */
#define PATH_MAX_LEN 65536u
#define META_STR_MAX 256u
/* The target's architecture is named in the file (arch.h's names), so
 * that a reader refuses, rather than misreads, one it does not know. */

/* CRC-32 (zlib's), fed in pieces: a section may pass 4 GiB, zlib takes
 * a uInt at a time. */
static uint32_t crc32_update(uint32_t crc, const void *data, size_t n)
{
	const Bytef *p = data;
	while (n) {
		uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = (uint32_t)crc32(crc, p, chunk);
		p += chunk;
		n -= chunk;
	}
	return crc;
}

static void le32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static uint64_t rd64(const uint8_t *b)
{
	return rd32(b) | (uint64_t)rd32(b + 4) << 32;
}

static enum pyd_err fail(char *detail, size_t detailsz, enum pyd_err err,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static enum pyd_err fail(char *detail, size_t detailsz, enum pyd_err err,
			 const char *fmt, ...)
{
	if (detail && detailsz) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(detail, detailsz, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* ---- Recording ---- */

/*
 * One merged run of recorded bytes, at buf + head.  The buffer keeps slack
 * on the side the run last grew to, doubling when it runs out, so a walk
 * of adjacent reads in either direction (frames go downwards) costs
 * amortised O(len) per read, not a copy of the whole run.
 */
struct rec_range {
	uint64_t addr, len;
	uint8_t *buf;
	size_t head, cap;
};

struct pyd_recorder {
	struct pyd_layer layer; /* recording through layer.src */
	/* Sorted, disjoint and never adjacent: touching runs are merged. */
	struct rec_range *ranges;
	size_t nranges, rcap;
	struct pyd_mapping *maps;
	size_t nmaps;
	bool have_maps;
	struct pyd_os_thread *threads;
	size_t nthreads, tcap;
	bool have_threads;
	char kind[32];
	uint32_t holds;
	/* Recording lost bytes: the file would replay differently. */
	bool nomem;
};

static uint64_t range_end(const struct rec_range *r)
{
	return r->addr + r->len;
}

/* The first run that overlaps or touches addr (ends at or after it). */
static size_t first_touching(const struct pyd_recorder *r, uint64_t addr)
{
	size_t lo = 0, hi = r->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (range_end(&r->ranges[mid]) < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool insert_range(struct pyd_recorder *r, size_t i, uint64_t addr,
			 const void *buf, size_t len)
{
	if (!pyd_grow((void **)&r->ranges, &r->rcap, r->nranges + 1,
	              sizeof *r->ranges))
		return false;
	uint8_t *data = malloc(len);
	if (!data)
		return false;
	memcpy(data, buf, len);
	memmove(&r->ranges[i + 1], &r->ranges[i],
		(r->nranges - i) * sizeof *r->ranges);
	r->ranges[i] = (struct rec_range){addr, len, data, 0, len};
	r->nranges++;
	return true;
}

/* Make run f span [lo, hi), keeping its bytes; the new ones are not set. */
static bool widen_range(struct rec_range *f, uint64_t lo, uint64_t hi)
{
	size_t front = (size_t)(f->addr - lo), size = (size_t)(hi - lo);
	if (front <= f->head && f->head - front + size <= f->cap) {
		f->head -= front;
	} else {
		size_t cap = f->cap * 2 > size ? f->cap * 2 : size;
		size_t head = front ? cap - size : 0;
		uint8_t *buf = malloc(cap);
		if (!buf)
			return false;
		memcpy(buf + head + front, f->buf + f->head, f->len);
		free(f->buf);
		f->buf = buf;
		f->head = head;
		f->cap = cap;
	}
	f->addr = lo;
	f->len = size;
	return true;
}

/* Runs i..j-1 all touch [addr, addr + len): fold them and it into run i.
 * The new bytes go in last: they are the latest. */
static bool merge_ranges(struct pyd_recorder *r, size_t i, size_t j,
			 uint64_t addr, const void *buf, size_t len)
{
	struct rec_range *f = &r->ranges[i];
	uint64_t lo = f->addr < addr ? f->addr : addr;
	uint64_t hi = range_end(&r->ranges[j - 1]);
	if (hi < addr + len)
		hi = addr + len;
	if (!widen_range(f, lo, hi))
		return false;
	uint8_t *data = f->buf + f->head;
	for (size_t k = i + 1; k < j; k++) {
		const struct rec_range *o = &r->ranges[k];
		memcpy(data + (o->addr - lo), o->buf + o->head, o->len);
		free(o->buf);
	}
	memcpy(data + (addr - lo), buf, len);
	memmove(&r->ranges[i + 1], &r->ranges[j],
		(r->nranges - j) * sizeof *r->ranges);
	r->nranges -= j - i - 1;
	return true;
}

static void record(struct pyd_recorder *r, uint64_t addr, const void *buf,
		   size_t len)
{
	if (len == 0 || len > UINT64_MAX - addr)
		return;
	uint64_t end = addr + len;
	size_t i = first_touching(r, addr);
	struct rec_range *f = i < r->nranges ? &r->ranges[i] : NULL;
	/* The common case once warm (the sampler): already recorded. */
	if (f && f->addr <= addr && end <= range_end(f)) {
		memcpy(f->buf + f->head + (addr - f->addr), buf, len);
		return;
	}
	size_t j = i;
	while (j < r->nranges && r->ranges[j].addr <= end)
		j++;
	bool ok = i == j ? insert_range(r, i, addr, buf, len)
			 : merge_ranges(r, i, j, addr, buf, len);
	if (!ok)
		r->nomem = true;
}

static enum pyd_err rec_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyd_recorder *r = ctx;
	enum pyd_err err = pyd_read(r->layer.inner, addr, buf, len);
	if (!err)
		record(r, addr, buf, len);
	return err;
}

static void free_maps(struct pyd_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(maps[i].path);
	free(maps);
}

static bool copy_maps(struct pyd_recorder *r, const struct pyd_mapping *maps,
		      size_t n)
{
	struct pyd_mapping *m = calloc(n ? n : 1, sizeof *m);
	if (!m)
		return false;
	for (size_t i = 0; i < n; i++) {
		m[i] = maps[i];
		m[i].path = NULL;
		if (maps[i].path && !(m[i].path = strdup(maps[i].path))) {
			free_maps(m, i);
			return false;
		}
	}
	free_maps(r->maps, r->nmaps);
	r->maps = m;
	r->nmaps = n;
	r->have_maps = true;
	return true;
}

static enum pyd_err rec_mappings(void *ctx, const struct pyd_mapping **maps,
				 size_t *n)
{
	struct pyd_recorder *r = ctx;
	enum pyd_err err = r->layer.inner->mappings(r->layer.inner->ctx, maps, n);
	if (!err && !copy_maps(r, *maps, *n))
		r->nomem = true;
	return err;
}

static enum pyd_err rec_threads(void *ctx, const struct pyd_os_thread **t,
				size_t *n)
{
	struct pyd_recorder *r = ctx;
	enum pyd_err err = r->layer.inner->threads(r->layer.inner->ctx, t, n);
	if (err)
		return err;
	if (*n > r->tcap) {
		void *p = realloc(r->threads, *n * sizeof *r->threads);
		if (!p) {
			r->nomem = true;
			return err;
		}
		r->threads = p;
		r->tcap = *n;
	}
	if (*n)
		memcpy(r->threads, *t, *n * sizeof *r->threads);
	r->nthreads = *n;
	r->have_threads = true;
	return err;
}

enum pyd_err pyd_recorder_new(const struct pyd_memsrc *inner,
			      struct pyd_recorder **out)
{
	struct pyd_recorder *r = calloc(1, sizeof *r);
	if (!r)
		return PYD_E_NOMEM;
	snprintf(r->kind, sizeof r->kind, "unknown");
	/* Only what a snapshot keeps: no thread_run, registers or futex
	 * waits (a replay would say otherwise than the dump it recorded). */
	pyd_layer_init(&r->layer, inner, rec_read, NULL);
	r->layer.src.thread_run = NULL;
	r->layer.src.regs = NULL;
	r->layer.src.futex_wait = NULL;
	if (inner->mappings)
		r->layer.src.mappings = rec_mappings;
	if (inner->threads)
		r->layer.src.threads = rec_threads;
	*out = r;
	return PYD_OK;
}

const struct pyd_memsrc *pyd_recorder_memsrc(struct pyd_recorder *r)
{
	return &r->layer.src;
}

void pyd_recorder_set_holds(struct pyd_recorder *r, uint32_t holds)
{
	r->holds = holds;
}

void pyd_recorder_set_source_kind(struct pyd_recorder *r, const char *kind)
{
	snprintf(r->kind, sizeof r->kind, "%s", kind);
}

void pyd_recorder_free(struct pyd_recorder *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nranges; i++)
		free(r->ranges[i].buf);
	free(r->ranges);
	free_maps(r->maps, r->nmaps);
	free(r->threads);
	free(r);
}

/* ---- Writing ---- */

/*
 * Sections are emitted twice by the same code: once counting, for the
 * length that precedes the payload, then for real.  Memory is streamed
 * from the recorder, never copied into one big buffer.
 */
struct writer {
	FILE *f; /* NULL while counting */
	uint64_t pos;
	uint32_t crc;
	int err; /* first errno */
};

static void put(struct writer *w, const void *p, size_t n)
{
	w->pos += n;
	if (!w->f)
		return;
	w->crc = crc32_update(w->crc, p, n);
	if (!w->err && n && fwrite(p, 1, n, w->f) != n)
		w->err = errno ? errno : EIO;
}

static void put_u8(struct writer *w, uint8_t v)
{
	put(w, &v, 1);
}

static void put_u32(struct writer *w, uint32_t v)
{
	uint8_t b[4];
	le32(b, v);
	put(w, b, sizeof b);
}

static void put_u64(struct writer *w, uint64_t v)
{
	uint8_t b[8];
	le64(b, v);
	put(w, b, sizeof b);
}

/* Length with the NUL, then the bytes and the NUL; 0 for NULL. */
static void put_str(struct writer *w, const char *s, size_t max)
{
	if (!s) {
		put_u32(w, 0);
		return;
	}
	size_t n = strnlen(s, max - 1);
	put_u32(w, (uint32_t)(n + 1));
	put(w, s, n);
	put_u8(w, 0);
}

struct write_ctx {
	const struct pyd_recorder *r;
	const struct pyd_runtime *rt;
	int64_t created;
	int pid;
};

static void body_meta(struct writer *w, const struct write_ctx *c)
{
	put_u64(w, (uint64_t)c->created);
	put_u32(w, (uint32_t)c->pid);
	put_str(w, "pystack-dump " PYD_VERSION, META_STR_MAX);
	put_str(w, c->r->kind, META_STR_MAX);
	put_str(w, pyd_memsrc_arch(&c->r->layer.src)->name, META_STR_MAX);
	put_u32(w, c->r->holds);
}

static void body_runtime(struct writer *w, const struct write_ctx *c)
{
	const struct pyd_runtime *rt = c->rt;
	put_str(w, rt->binary, sizeof rt->binary);
	put_u64(w, rt->runtime_addr);
	put_u64(w, rt->py_version_addr);
	put_u64(w, rt->tstate_current_addr);
	put_u64(w, rt->interp_head_addr);
	put_u32(w, (uint32_t)rt->major);
	put_u32(w, (uint32_t)rt->minor);
	put_str(w, rt->version, sizeof rt->version);
	put_u8(w, rt->debug_build);
	put_u64(w, rt->code_type_addr);
	put_u64(w, rt->asyncio_debug_addr);
}

static void body_mappings(struct writer *w, const struct write_ctx *c)
{
	put_u32(w, (uint32_t)c->r->nmaps);
	for (size_t i = 0; i < c->r->nmaps; i++) {
		const struct pyd_mapping *m = &c->r->maps[i];
		uint8_t perms[4] = {0};
		memcpy(perms, m->perms, strnlen(m->perms, sizeof perms));
		put_u64(w, m->start);
		put_u64(w, m->end);
		put_u64(w, m->offset);
		put_u64(w, m->inode);
		put_u32(w, m->dev_major);
		put_u32(w, m->dev_minor);
		put(w, perms, sizeof perms);
		put_str(w, m->path, PATH_MAX_LEN);
	}
}

static void body_threads(struct writer *w, const struct write_ctx *c)
{
	put_u32(w, (uint32_t)c->r->nthreads);
	for (size_t i = 0; i < c->r->nthreads; i++) {
		const struct pyd_os_thread *t = &c->r->threads[i];
		put_u64(w, (uint64_t)t->tid);
		put_u8(w, (uint8_t)t->run);
		put_str(w, t->name, sizeof t->name);
	}
}

static void body_memory(struct writer *w, const struct write_ctx *c)
{
	put_u64(w, c->r->nranges);
	for (size_t i = 0; i < c->r->nranges; i++) {
		const struct rec_range *rr = &c->r->ranges[i];
		put_u64(w, rr->addr);
		put_u64(w, rr->len);
		put(w, rr->buf + rr->head, rr->len);
	}
}

typedef void body_fn(struct writer *, const struct write_ctx *);

static void put_section(struct writer *w, uint32_t type, body_fn *body,
			const struct write_ctx *c)
{
	struct writer count = {0};
	body(&count, c);
	w->crc = 0;
	put_u32(w, type);
	put_u32(w, 0);
	put_u64(w, count.pos);
	body(w, c);
	put_u32(w, w->crc);
}

/* Last, once the file size is known: it goes into the header, so a file
 * cut short at a section boundary still reads as truncated. */
static void put_header(struct writer *w)
{
	uint8_t h[SNAP_HEADER_SIZE] = {0};
	memcpy(h, SNAP_MAGIC, 8);
	le32(h + 8, SNAP_VERSION);
	le32(h + 12, SNAP_HEADER_SIZE);
	le64(h + 16, w->pos);
	le32(h + SNAP_CRC_OFFSET, crc32_update(0, h, sizeof h));
	if (w->err)
		return;
	if (fseek(w->f, 0, SEEK_SET) != 0 ||
	    fwrite(h, 1, sizeof h, w->f) != sizeof h)
		w->err = errno ? errno : EIO;
}

static void put_file(struct writer *w, const struct write_ctx *c)
{
	static const uint8_t zero[SNAP_HEADER_SIZE];
	put(w, zero, sizeof zero); /* the header, once the size is known */
	put_section(w, SECT_META, body_meta, c);
	put_section(w, SECT_RUNTIME, body_runtime, c);
	if (c->r->have_maps)
		put_section(w, SECT_MAPPINGS, body_mappings, c);
	if (c->r->have_threads)
		put_section(w, SECT_THREADS, body_threads, c);
	put_section(w, SECT_MEMORY, body_memory, c);
	put_header(w);
}

/* Flush to disk before the rename, so a crash leaves the old file or the
 * whole new one. */
static int finish_file(FILE *f, int err)
{
	if (!err && fflush(f) != 0)
		err = errno;
	if (!err && fsync(fileno(f)) != 0)
		err = errno;
	if (fclose(f) != 0 && !err)
		err = errno;
	return err;
}

/* A new file next to path, for the rename; mkostemp makes it 0600, right
 * for a file holding the target's memory.  *tmp is the caller's to free. */
static enum pyd_err create_tmp(const char *path, char **tmp, FILE **f,
			       char *detail, size_t detailsz)
{
	size_t plen = strlen(path);
	if (!(*tmp = malloc(plen + sizeof ".XXXXXX")))
		return PYD_E_NOMEM;
	memcpy(*tmp, path, plen);
	memcpy(*tmp + plen, ".XXXXXX", sizeof ".XXXXXX");
	int fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd >= 0 && (*f = fdopen(fd, "wb")))
		return PYD_OK;
	int e = errno;
	if (fd >= 0) {
		close(fd);
		unlink(*tmp);
	}
	return fail(detail, detailsz, PYD_E_WRITE,
		    "cannot create snapshot %s: %s", path, strerror(e));
}

enum pyd_err pyd_snapshot_write(struct pyd_recorder *r,
				const struct pyd_runtime *rt, int pid,
				const char *path, char *detail, size_t detailsz)
{
	if (r->nomem)
		return fail(detail, detailsz, PYD_E_NOMEM,
			    "ran out of memory while recording; the snapshot "
			    "would be incomplete");
	char *tmp = NULL;
	FILE *f;
	enum pyd_err perr = create_tmp(path, &tmp, &f, detail, detailsz);
	if (perr) {
		free(tmp);
		return perr;
	}
	struct writer w = {.f = f};
	struct write_ctx c = {r, rt, (int64_t)time(NULL), pid};
	put_file(&w, &c);
	int err = finish_file(f, w.err);
	if (!err && rename(tmp, path) != 0)
		err = errno;
	if (err)
		unlink(tmp);
	free(tmp);
	if (err)
		return fail(detail, detailsz, PYD_E_WRITE,
			    "cannot write snapshot %s: %s", path,
			    strerror(err));
	return PYD_OK;
}

/* ---- Replaying ---- */

struct snap_range {
	uint64_t addr, len;
	const uint8_t *data; /* into the file image */
};

struct pyd_snapshot {
	struct pyd_memsrc src;
	uint8_t *file; /* the whole file; strings and bytes point into it */
	size_t size;
	struct pyd_runtime rt;
	int pid;
	struct pyd_snapshot_meta meta;
	char *arch;
	struct pyd_mapping *maps;
	size_t nmaps;
	struct pyd_os_thread *threads;
	size_t nthreads;
	struct snap_range *ranges; /* sorted, disjoint */
	size_t nranges;
	unsigned seen; /* bit per section type */
};

static enum pyd_err snap_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct pyd_snapshot *s = ctx;
	if (len == 0)
		return PYD_OK;
	/* The last range starting at or before addr. */
	size_t lo = 0, hi = s->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ranges[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return PYD_E_READ;
	const struct snap_range *r = &s->ranges[lo - 1];
	uint64_t off = addr - r->addr;
	if (off >= r->len || len > r->len - off)
		return PYD_E_READ;
	memcpy(buf, r->data + off, len);
	return PYD_OK;
}

static enum pyd_err snap_mappings(void *ctx, const struct pyd_mapping **maps,
				  size_t *n)
{
	const struct pyd_snapshot *s = ctx;
	*maps = s->maps;
	*n = s->nmaps;
	return PYD_OK;
}

static enum pyd_err snap_threads(void *ctx, const struct pyd_os_thread **t,
				 size_t *n)
{
	const struct pyd_snapshot *s = ctx;
	*t = s->threads;
	*n = s->nthreads;
	return PYD_OK;
}

/*
 * A bounded cursor over one payload.  Every getter checks the bytes are
 * there; past the end it returns zeros and sets short_, so a parser can
 * read a whole record and check once.
 */
struct cur {
	uint8_t *p;
	uint64_t len, pos;
	bool short_;
};

static uint8_t *get_bytes(struct cur *c, uint64_t n)
{
	if (c->short_ || n > c->len - c->pos) {
		c->short_ = true;
		return NULL;
	}
	uint8_t *p = c->p + c->pos;
	c->pos += n;
	return p;
}

static uint8_t get_u8(struct cur *c)
{
	const uint8_t *b = get_bytes(c, 1);
	return b ? b[0] : 0;
}

static uint32_t get_u32(struct cur *c)
{
	const uint8_t *b = get_bytes(c, 4);
	return b ? rd32(b) : 0;
}

static uint64_t get_u64(struct cur *c)
{
	const uint8_t *b = get_bytes(c, 8);
	return b ? rd64(b) : 0;
}

static uint64_t remaining(const struct cur *c)
{
	return c->len - c->pos;
}

static const char payload_short[] = "payload ends early";
/* Returned by the parsers for a failed allocation, not a bad file. */
static const char oom[] = "out of memory";

/* A string of at most max bytes (NUL included), NULL when absent. */
static const char *get_str(struct cur *c, size_t max, bool nullable,
			   char **out)
{
	uint32_t n = get_u32(c);
	*out = NULL;
	if (c->short_)
		return payload_short;
	if (n == 0)
		return nullable ? NULL : "a required string is missing";
	if (n > max)
		return "a string is longer than allowed";
	char *p = (char *)get_bytes(c, n);
	if (!p)
		return payload_short;
	if (memchr(p, 0, n) != p + n - 1)
		return "a string is not NUL-terminated";
	*out = p;
	return NULL;
}

static const char *parse_meta(struct pyd_snapshot *s, struct cur *c)
{
	s->meta.created = (int64_t)get_u64(c);
	s->pid = (int32_t)get_u32(c);
	char *tool, *kind;
	const char *bad = get_str(c, META_STR_MAX, false, &tool);
	if (!bad)
		bad = get_str(c, META_STR_MAX, false, &kind);
	if (!bad)
		bad = get_str(c, META_STR_MAX, false, &s->arch);
	if (bad)
		return bad;
	s->meta.tool_version = tool;
	s->meta.source_kind = kind;
	/* Appended later in version 1: older files end before it. */
	s->meta.holds_known = remaining(c) >= 4;
	s->meta.holds = s->meta.holds_known ? get_u32(c) : 0;
	return NULL;
}

static const char *parse_runtime(struct pyd_snapshot *s, struct cur *c)
{
	struct pyd_runtime *rt = &s->rt;
	char *binary, *version;
	const char *bad = get_str(c, sizeof rt->binary, false, &binary);
	if (bad)
		return bad;
	memcpy(rt->binary, binary, strlen(binary) + 1);
	rt->runtime_addr = get_u64(c);
	rt->py_version_addr = get_u64(c);
	rt->tstate_current_addr = get_u64(c);
	rt->interp_head_addr = get_u64(c);
	rt->major = (int32_t)get_u32(c);
	rt->minor = (int32_t)get_u32(c);
	if ((bad = get_str(c, sizeof rt->version, false, &version)))
		return bad;
	memcpy(rt->version, version, strlen(version) + 1);
	uint8_t debug = get_u8(c);
	if (c->short_)
		return payload_short;
	if (debug > 1)
		return "debug_build is neither 0 nor 1";
	rt->debug_build = debug;
	/* Appended later in version 1: older files end before it. */
	rt->code_type_addr = remaining(c) >= 8 ? get_u64(c) : 0;
	rt->asyncio_debug_addr = remaining(c) >= 8 ? get_u64(c) : 0;
	return NULL;
}

static const char *parse_mapping(struct cur *c, struct pyd_mapping *m)
{
	m->start = get_u64(c);
	m->end = get_u64(c);
	m->offset = get_u64(c);
	m->inode = get_u64(c);
	m->dev_major = get_u32(c);
	m->dev_minor = get_u32(c);
	const uint8_t *perms = get_bytes(c, 4);
	if (perms)
		memcpy(m->perms, perms, 4);
	const char *bad = get_str(c, PATH_MAX_LEN, true, &m->path);
	if (!bad && m->end < m->start)
		bad = "a mapping ends before it starts";
	return bad;
}

static const char *parse_mappings(struct pyd_snapshot *s, struct cur *c)
{
	uint32_t n = get_u32(c);
	if (c->short_)
		return payload_short;
	if (n > MAX_MAPPINGS || n > remaining(c) / MAPPING_MIN)
		return "mapping count is larger than the payload holds";
	if (!(s->maps = calloc(n ? n : 1, sizeof *s->maps)))
		return oom;
	for (uint32_t i = 0; i < n; i++) {
		const char *bad = parse_mapping(c, &s->maps[i]);
		if (bad)
			return bad;
	}
	s->nmaps = n;
	s->src.mappings = snap_mappings;
	return NULL;
}

static const char *parse_threads(struct pyd_snapshot *s, struct cur *c)
{
	uint32_t n = get_u32(c);
	if (c->short_)
		return payload_short;
	if (n > MAX_THREADS || n > remaining(c) / THREAD_MIN)
		return "thread count is larger than the payload holds";
	if (!(s->threads = calloc(n ? n : 1, sizeof *s->threads)))
		return oom;
	for (uint32_t i = 0; i < n; i++) {
		struct pyd_os_thread *t = &s->threads[i];
		char *name;
		t->tid = (int64_t)get_u64(c);
		uint8_t run = get_u8(c);
		const char *bad = get_str(c, sizeof t->name, false, &name);
		if (bad)
			return bad;
		memcpy(t->name, name, strlen(name) + 1);
		/* A state a newer writer knows is still a thread. */
		t->run = run <= PYD_RUN_IDLE ? (enum pyd_thread_run)run
					     : PYD_RUN_UNKNOWN;
	}
	s->nthreads = n;
	s->src.threads = snap_threads;
	return NULL;
}

/* prev is the range before r, NULL for the first. */
static const char *parse_range(struct cur *c, struct snap_range *r,
			       const struct snap_range *prev)
{
	r->addr = get_u64(c);
	r->len = get_u64(c);
	if (c->short_)
		return payload_short;
	if (r->len == 0)
		return "a memory range is empty";
	if (r->len > UINT64_MAX - r->addr)
		return "a memory range wraps around the address space";
	/* Apart, not just disjoint: the writer merges touching ranges, and
	 * a lookup then never has to span two. */
	if (prev && r->addr <= prev->addr + prev->len)
		return "memory ranges are not sorted, disjoint and apart";
	if (!(r->data = get_bytes(c, r->len)))
		return payload_short;
	return NULL;
}

static const char *parse_memory(struct pyd_snapshot *s, struct cur *c)
{
	uint64_t n = get_u64(c);
	if (c->short_)
		return payload_short;
	if (n > remaining(c) / RANGE_MIN)
		return "range count is larger than the payload holds";
	if (!(s->ranges = calloc(n ? n : 1, sizeof *s->ranges)))
		return oom;
	for (uint64_t i = 0; i < n; i++) {
		const char *bad = parse_range(c, &s->ranges[i],
					      i ? &s->ranges[i - 1] : NULL);
		if (bad)
			return bad;
	}
	s->nranges = (size_t)n;
	return NULL;
}

static const char *const sect_names[SECT_NTYPES] = {
	[SECT_META] = "META",         [SECT_RUNTIME] = "RUNTIME",
	[SECT_MAPPINGS] = "MAPPINGS", [SECT_THREADS] = "THREADS",
	[SECT_MEMORY] = "MEMORY",
};

typedef const char *parse_fn(struct pyd_snapshot *, struct cur *);

static parse_fn *const parsers[SECT_NTYPES] = {
	[SECT_META] = parse_meta,         [SECT_RUNTIME] = parse_runtime,
	[SECT_MAPPINGS] = parse_mappings, [SECT_THREADS] = parse_threads,
	[SECT_MEMORY] = parse_memory,
};

#define CORRUPT "snapshot corrupt: "

/* "MEMORY section", or "section type 9" for one we do not know. */
static const char *sect_label(uint32_t type, char *buf, size_t bufsz)
{
	if (type > 0 && type < SECT_NTYPES)
		snprintf(buf, bufsz, "%s section", sect_names[type]);
	else
		snprintf(buf, bufsz, "section type %u", type);
	return buf;
}

static enum pyd_err parse_section(struct pyd_snapshot *s, uint32_t type,
				  uint32_t flags, struct cur *c, uint64_t off,
				  char *detail, size_t detailsz)
{
	char label[32];
	sect_label(type, label, sizeof label);
	if (type == 0 || type >= SECT_NTYPES) {
		if (!(flags & SECT_CRITICAL))
			return PYD_OK; /* from a newer writer: skip it */
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    "snapshot needs %s, which this pystack-dump does "
			    "not know; upgrade pystack-dump",
			    label);
	}
	if (s->seen & 1u << type)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    CORRUPT "a second %s at byte %llu", label,
			    (unsigned long long)off);
	s->seen |= 1u << type;
	const char *bad = parsers[type](s, c);
	if (bad == oom)
		return PYD_E_NOMEM;
	if (bad)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    CORRUPT "%s at byte %llu: %s", label,
			    (unsigned long long)off, bad);
	return PYD_OK;
}

/* Each section: u32 type, u32 flags, u64 length, payload, u32 CRC. */
static enum pyd_err parse_sections(struct pyd_snapshot *s, uint64_t off,
				   char *detail, size_t detailsz)
{
	while (off < s->size) {
		const uint8_t *h = s->file + off;
		uint64_t left = s->size - off;
		if (left < SECT_HEAD + SECT_TAIL)
			return fail(detail, detailsz, PYD_E_SNAPSHOT,
				    CORRUPT "section header at byte %llu runs "
				    "past the end of the file (%zu bytes)",
				    (unsigned long long)off, s->size);
		uint64_t len = rd64(h + 8);
		if (len > left - SECT_HEAD - SECT_TAIL)
			return fail(detail, detailsz, PYD_E_SNAPSHOT,
				    CORRUPT "section at byte %llu: length %llu "
				    "runs past the end of the file (%zu bytes)",
				    (unsigned long long)off,
				    (unsigned long long)len, s->size);
		char label[32];
		if (crc32_update(0, h, SECT_HEAD + len) !=
		    rd32(h + SECT_HEAD + len))
			return fail(detail, detailsz, PYD_E_SNAPSHOT,
				    CORRUPT "%s at byte %llu: checksum "
				    "mismatch",
				    sect_label(rd32(h), label, sizeof label),
				    (unsigned long long)off);
		struct cur c = {s->file + off + SECT_HEAD, len, 0, false};
		enum pyd_err err = parse_section(s, rd32(h), rd32(h + 4), &c,
						 off, detail, detailsz);
		if (err)
			return err;
		off += SECT_HEAD + len + SECT_TAIL;
	}
	static const uint32_t required[] = {SECT_META, SECT_RUNTIME,
					    SECT_MEMORY};
	for (size_t i = 0; i < sizeof required / sizeof *required; i++)
		if (!(s->seen & 1u << required[i]))
			return fail(detail, detailsz, PYD_E_SNAPSHOT,
				    CORRUPT "it has no %s section",
				    sect_names[required[i]]);
	return PYD_OK;
}

/*
 * The fixed preamble every format version starts with: magic, version,
 * header size, file size, header CRC.  The CRC is checked before the
 * version, so a damaged version field reads as corruption, not as "newer".
 */
static enum pyd_err check_header(const uint8_t *f, size_t size,
				 uint32_t *hsize, char *detail, size_t detailsz)
{
	size_t m = size < 8 ? size : 8;
	if (size == 0 || memcmp(f, SNAP_MAGIC, m) != 0)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    "not a pystack-dump snapshot (%s)",
			    size ? "bad magic" : "empty file");
	if (size < SNAP_HEADER_SIZE)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    "snapshot truncated at byte %zu (expected at least "
			    "%u)",
			    size, SNAP_HEADER_SIZE);
	*hsize = rd32(f + 12);
	if (*hsize < SNAP_HEADER_SIZE || *hsize > SNAP_HEADER_MAX)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    CORRUPT "header size %u", *hsize);
	if (size < *hsize)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    "snapshot truncated at byte %zu (expected at least "
			    "%u)",
			    size, *hsize);
	static const uint8_t zero[4];
	uint32_t crc = crc32_update(0, f, SNAP_CRC_OFFSET);
	crc = crc32_update(crc, zero, 4);
	crc = crc32_update(crc, f + SNAP_CRC_OFFSET + 4,
			   *hsize - SNAP_CRC_OFFSET - 4);
	if (crc != rd32(f + SNAP_CRC_OFFSET))
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    CORRUPT "header checksum mismatch");
	uint32_t version = rd32(f + 8);
	if (version == 0)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    CORRUPT "format version 0");
	if (version > SNAP_VERSION)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    "snapshot format version %u is newer than this "
			    "pystack-dump reads (%u); upgrade pystack-dump",
			    version, SNAP_VERSION);
	uint64_t want = rd64(f + 16);
	if (size < want)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    "snapshot truncated at byte %zu (expected %llu)",
			    size, (unsigned long long)want);
	if (size > want)
		return fail(detail, detailsz, PYD_E_SNAPSHOT,
			    CORRUPT "%llu unexpected bytes after its end at "
			    "byte %llu",
			    (unsigned long long)(size - want),
			    (unsigned long long)want);
	return PYD_OK;
}

/* Read fd until s->file holds want bytes (or the file ends early: the
 * header check says so). */
static enum pyd_err read_upto(int fd, struct pyd_snapshot *s, size_t want,
			      const char *path, char *detail, size_t detailsz)
{
	while (s->size < want) {
		ssize_t n = read(fd, s->file + s->size, want - s->size);
		if (n == 0)
			break;
		if (n > 0)
			s->size += (size_t)n;
		else if (errno != EINTR)
			return fail(detail, detailsz, PYD_E_SNAPSHOT,
				    "cannot read snapshot %s: %s", path,
				    strerror(errno));
	}
	return PYD_OK;
}

/*
 * The whole file, into memory: a file changed or truncated under us then
 * cannot fault the reader, as an mmap could.  Its header is checked
 * first (magic, checksum, the size it declares), so a file that is no
 * snapshot is refused before the rest of it is read, however big.
 */
static enum pyd_err load_file(const char *path, struct pyd_snapshot *s,
			      uint32_t *hsize, char *detail, size_t detailsz)
{
	int fd = pyd_open_regular(path);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return e == EINVAL || e == EISDIR
		           ? fail(detail, detailsz, PYD_E_SNAPSHOT,
		                  "snapshot %s is not a regular file", path)
		           : fail(detail, detailsz, PYD_E_SNAPSHOT,
		                  "cannot open snapshot %s: %s", path,
		                  strerror(e));
	}
	size_t size = (size_t)st.st_size;
	size_t head = size < SNAP_HEADER_MAX ? size : SNAP_HEADER_MAX;
	enum pyd_err err = PYD_OK;
	if (!(s->file = malloc(head ? head : 1)))
		err = PYD_E_NOMEM;
	if (!err)
		err = read_upto(fd, s, head, path, detail, detailsz);
	if (!err)
		err = check_header(s->file, s->size < head ? s->size : size,
				   hsize, detail, detailsz);
	void *whole = err ? NULL : realloc(s->file, size ? size : 1);
	if (!err && !whole)
		err = PYD_E_NOMEM;
	if (whole)
		s->file = whole;
	if (!err)
		err = read_upto(fd, s, size, path, detail, detailsz);
	close(fd);
	return err;
}

enum pyd_err pyd_snapshot_open(const char *path, struct pyd_snapshot **out,
			       char *detail, size_t detailsz)
{
	*out = NULL;
	struct pyd_snapshot *s = calloc(1, sizeof *s);
	if (!s)
		return PYD_E_NOMEM;
	s->src = (struct pyd_memsrc){.ctx = s, .read = snap_read};
	uint32_t hsize = 0;
	enum pyd_err err = load_file(path, s, &hsize, detail, detailsz);
	/* The file may have changed between its header and its end. */
	if (!err)
		err = check_header(s->file, s->size, &hsize, detail, detailsz);
	if (!err)
		err = parse_sections(s, hsize, detail, detailsz);
	if (!err && !(s->src.arch = pyd_arch_by_name(s->arch)))
		err = fail(detail, detailsz, PYD_E_SNAPSHOT,
			   "snapshot of a %s target; this pystack-dump reads "
			   "%s only",
			   s->arch, pyd_arch_labels());
	if (err) {
		pyd_snapshot_close(s);
		return err;
	}
	*out = s;
	return PYD_OK;
}

const struct pyd_memsrc *pyd_snapshot_memsrc(struct pyd_snapshot *s)
{
	return &s->src;
}

const struct pyd_runtime *pyd_snapshot_runtime(const struct pyd_snapshot *s)
{
	return &s->rt;
}

int pyd_snapshot_pid(const struct pyd_snapshot *s)
{
	return s->pid;
}

const struct pyd_snapshot_meta *pyd_snapshot_meta(const struct pyd_snapshot *s)
{
	return &s->meta;
}

void pyd_snapshot_close(struct pyd_snapshot *s)
{
	if (!s)
		return;
	free(s->maps);
	free(s->threads);
	free(s->ranges);
	free(s->file);
	free(s);
}
