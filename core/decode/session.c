/*
 * Session: layout selection, and what the session holds (the code cache,
 * filled by code.c, is freed with it).
 */
#include "session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../cpython/debug_offsets.h"

void pyd_code_free(struct pyd_code *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->qualname);
	free(c->file);
	free(c->linetable);
	free(c->tlbc);
	for (size_t i = 0; i < c->nvars; i++)
		free(c->vars[i].name);
	free(c->vars);
	free(c);
}

static void format_hex_version(uint64_t hex, char *out, size_t outsz)
{
	static const char *level[16] = {[0xA] = "a", [0xB] = "b", [0xC] = "rc"};
	unsigned ma = (hex >> 24) & 0xff, mi = (hex >> 16) & 0xff,
		 micro = (hex >> 8) & 0xff, lv = (hex >> 4) & 0xf, ser = hex & 0xf;
	if (lv == 0xF || !level[lv])
		snprintf(out, outsz, "%u.%u.%u", ma, mi, micro);
	else
		snprintf(out, outsz, "%u.%u.%u%s%u", ma, mi, micro, level[lv], ser);
}

/* 3.13+: the layout the target publishes about itself.  *ft: whether
 * the block's header says the build is free-threaded, which the built-in
 * table needs too when the block's members are of an order we do not
 * know. */
static bool layout_from_target(struct pyd_session *s, bool *ft)
{
	uint8_t block[PY_DEBUG_OFFSETS_MAX_SIZE];
	uint64_t hex;
	size_t len = sizeof block;
	*ft = false;
	if (!s->rt.runtime_addr)
		return false;
	/* The most a block holds, in one read; _PyRuntime may sit near the
	 * end of a mapping: shrink until the read fits. */
	while (len >= 256 && pyd_read(s->src, s->rt.runtime_addr, block, len))
		len /= 2;
	if (len < 256 || py_debug_offsets_header(block, len, &hex, ft) ||
	    py_layout_from_debug_offsets(block, len, s->rt.debug_build,
					 &s->layout, &hex))
		return false;
	format_hex_version(hex, s->version, sizeof s->version);
	s->layout_source = "debug offsets";
	return true;
}

/* PY_VERSION_HEX of "3.9.18" (a final release: nothing else is known) */
static uint32_t version_hex(const char *v)
{
	unsigned ma = 0, mi = 0, micro = 0;
	sscanf(v, "%u.%u.%u", &ma, &mi, &micro);
	return ma << 24 | (mi & 0xff) << 16 | (micro & 0xff) << 8 | 0xf0;
}

static enum pyd_err layout_builtin(struct pyd_session *s, bool ft,
				   char *detail, size_t detailsz)
{
	uint32_t hex = 0;
	enum pyd_err rerr = s->rt.py_version_addr
				    ? pyd_read(s->src, s->rt.py_version_addr,
					       &hex, sizeof hex)
				    : PYD_OK;
	bool read_hex = !rerr && (hex >> 24) == 3; /* hex is 0 if unread */
	if (read_hex)
		format_hex_version(hex, s->version, sizeof s->version);
	else
		snprintf(s->version, sizeof s->version, "%s", s->rt.version);
	int major, minor;
	if (!pyd_parse_version(s->version, &major, &minor)) {
		/* A version that could not be read is not an unknown one: a
		 * process caught in execve has its file's first mappings and
		 * not yet the rest, and a launcher tries again on a read
		 * error. */
		snprintf(detail, detailsz,
			 rerr ? "cannot read the version of %s"
			      : "cannot tell which Python %s is",
			 s->rt.binary);
		return rerr ? rerr : PYD_E_UNSUPPORTED;
	}
	if (!read_hex)
		hex = version_hex(s->version);
	struct py_build b = { hex, s->rt.debug_build, ft };
	const struct py_layout *L = py_layout_builtin(&b);
	if (!L) {
		snprintf(detail, detailsz, "unsupported Python %s%s (%s)",
			 s->version,
			 ft ? " (free-threading build)"
			    : s->rt.debug_build ? " (debug build)" : "",
			 s->rt.binary);
		return PYD_E_UNSUPPORTED;
	}
	s->layout = *L;
	py_layout_for_arch(&s->layout, s->arch->mutex_extra);
	s->layout_source = "built-in table";
	return PYD_OK;
}

#define LINES_BYTES (PYD_LINE_CACHE * sizeof(struct pyd_line_slot))

enum pyd_err pyd_session_open(const struct pyd_memsrc *src,
			      const struct pyd_runtime *rt,
			      struct pyd_session **out, char *detail,
			      size_t detailsz)
{
	struct pyd_session *s = calloc(1, sizeof *s);
	void *lines = mmap(NULL, LINES_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!s || lines == MAP_FAILED) {
		free(s);
		if (lines != MAP_FAILED)
			munmap(lines, LINES_BYTES);
		return PYD_E_NOMEM;
	}
	s->lines = lines;
	pyd_budget_init(&s->budget, src, PYD_DUMP_MAX_READS,
			PYD_DUMP_MAX_BYTES);
	s->src = &s->budget.layer.src;
	s->window = 1;
	s->rt = *rt;
	s->arch = pyd_arch_by_machine(rt->e_machine);
	if (!s->arch)
		s->arch = pyd_memsrc_arch(src);
	detail[0] = 0;
	enum pyd_err err = PYD_OK;
	bool ft;
	if (!layout_from_target(s, &ft))
		err = layout_builtin(s, ft, detail, detailsz);
	if (err) {
		pyd_session_close(s);
		return err;
	}
	*out = s;
	return PYD_OK;
}

void pyd_session_paged(struct pyd_session *s, struct pyd_paged *p,
		       size_t npages)
{
	p->own = s->src;
	p->on = pyd_pagecache_init(&p->pc, s->src, npages);
	if (p->on)
		s->src = &p->pc.layer.src;
}

void pyd_session_unpaged(struct pyd_session *s, struct pyd_paged *p)
{
	s->src = p->own;
	if (p->on)
		pyd_pagecache_free(&p->pc);
	p->on = false;
}

/* Reads the dry runs so far missed: the batch's, and code objects they
 * left to the run that tried them first in the pass. */
static size_t dry_missed(const struct pyd_session *s,
			 const struct pyd_read_ahead *ra)
{
	return ra->pf.nfailed + s->dry_skipped;
}

/* Run every object not read whole yet dry once; whole[] says which were. */
static void dry_run(struct pyd_session *s, struct pyd_read_ahead *ra,
		    void (*dry)(void *, size_t), void *ctx, size_t n,
		    bool *whole)
{
	for (size_t i = 0; i < n; i++) {
		size_t missed = dry_missed(s, ra);
		if (whole[i])
			continue;
		dry(ctx, i);
		whole[i] = dry_missed(s, ra) == missed;
	}
}

static void read_ahead(struct pyd_session *s, struct pyd_read_ahead *ra,
		       void (*dry)(void *ctx, size_t i), void *ctx, size_t n,
		       unsigned max, bool alike)
{
	bool *whole = calloc(n ? n : 1, sizeof *whole);
	ra->own = s->src;
	pyd_prefetch_init(&ra->pf, s->src);
	s->src = &ra->pf.layer.src;
	/* The first object run for real: each of its reads is read now,
	 * and wanted in the first batch. */
	if (alike && n && whole && max) {
		dry(ctx, 0);
		pyd_prefetch_pass(&ra->pf);
	}
	ra->pf.dry = true;
	ra->pf.keep = true;
	s->dry = true;
	for (unsigned i = 0; whole && i < max; i++) {
		s->dry_pass++;
		dry_run(s, ra, dry, ctx, n, whole);
		if (!ra->pf.nmissed || pyd_prefetch_pass(&ra->pf))
			break;
	}
	s->dry = false;
	ra->pf.dry = false;
	free(whole);
}

void pyd_read_ahead(struct pyd_session *s, struct pyd_read_ahead *ra,
		    void (*dry)(void *ctx, size_t i), void *ctx, size_t n,
		    unsigned max)
{
	read_ahead(s, ra, dry, ctx, n, max, false);
}

void pyd_read_ahead_alike(struct pyd_session *s, struct pyd_read_ahead *ra,
			  void (*dry)(void *ctx, size_t i), void *ctx,
			  size_t n, unsigned max)
{
	read_ahead(s, ra, dry, ctx, n, max, true);
}

void pyd_read_ahead_end(struct pyd_session *s, struct pyd_read_ahead *ra)
{
	s->src = ra->own;
	pyd_prefetch_free(&ra->pf);
}

void pyd_session_close(struct pyd_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->codes_cap; i++)
		pyd_code_free(s->codes[i]);
	free(s->codes);
	free(s->used);
	free(s->greenlet_dwarf);
	munmap(s->lines, LINES_BYTES);
	free(s);
}

const char *pyd_session_version(const struct pyd_session *s)
{
	return s->version;
}

#define STR_(x) #x
#define STR(x) STR_(x)

void pyd_session_corrupt(struct pyd_session *s, const char *fmt, ...)
{
	if (s->corrupt[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->corrupt, sizeof s->corrupt, fmt, ap);
	va_end(ap);
}

const char *pyd_session_corruption(const struct pyd_session *s)
{
	if (s->corrupt[0])
		return s->corrupt;
	if (s->budget.spent)
		return "reading it took more than the " STR(PYD_DUMP_MAX_READS)
		       " reads one dump may take: its lists do not end where "
		       "they should";
	return NULL;
}

const char *pyd_session_layout_source(const struct pyd_session *s)
{
	return s->layout_source;
}

const char *pyd_session_binary(const struct pyd_session *s)
{
	return s->rt.binary;
}

bool pyd_session_free_threaded(const struct pyd_session *s)
{
	return s->layout.free_threaded;
}
