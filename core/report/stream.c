/*
 * The streamed formats' common part (stream.h): the profile's hook,
 * the records waiting in memory, when they are handed out, and the zstd
 * frames they go out in for a compressed format.  Each format's records
 * are its writer's (recording.c, jsonl.c).
 */
#include <stdlib.h>
#include <zstd.h>

#include "stream.h"

#define FLUSH_BYTES (64 * 1024)
/* Fast enough to keep up with the sampler; 4 gives little more. */
#define ZSTD_LEVEL 3

struct pyd_stream {
	struct pyd_profile *p;
	const struct pyd_stream_writer *w;
	void *st;
	struct pyd_buf out; /* records not yet handed out */
	ZSTD_CCtx *z;       /* compressed formats */
	void *zbuf;
	size_t zcap;
	pyd_stream_sink sink;
	void *ctx;
	uint64_t flushed_us; /* the samples' time at the last hand-out */
	bool headed, failed;
};

/* out as one zstd frame: a reader decodes every frame before a cut. */
static bool compress(struct pyd_stream *s)
{
	size_t need = ZSTD_compressBound(s->out.len);
	if (need > s->zcap) {
		void *n = realloc(s->zbuf, need);
		if (!n)
			return false;
		s->zbuf = n;
		s->zcap = need;
	}
	size_t n = ZSTD_compress2(s->z, s->zbuf, s->zcap, s->out.data,
	                          s->out.len);
	return !ZSTD_isError(n) && s->sink(s->ctx, s->zbuf, n);
}

static bool flush(struct pyd_stream *s)
{
	s->flushed_us = s->p->meta.round_us;
	if (s->failed || s->out.failed) {
		s->failed = true;
		return false;
	}
	if (!s->out.len)
		return true;
	bool ok = s->w->compressed ? compress(s)
	                           : s->sink(s->ctx, s->out.data, s->out.len);
	s->out.len = 0;
	s->failed = !ok;
	return ok;
}

static bool due(const struct pyd_stream *s)
{
	return s->out.len >= FLUSH_BYTES ||
	       s->p->meta.round_us >= s->flushed_us + s->w->flush_us;
}

/* The head, if not written yet; true if it was just written. */
static bool head(struct pyd_stream *s)
{
	if (s->headed)
		return false;
	if (s->w->head)
		s->w->head(&s->out, s->p, s->st);
	return (s->headed = true);
}

/* The profile's hook.  The head waits for the first sample, when the
 * run is described in p->meta, and goes out with it at once: a file
 * shows what it is from the start. */
static void on_sample(void *ctx, const struct pyd_profile *p,
                      const struct pyd_prof_sample *x)
{
	struct pyd_stream *s = ctx;
	if (s->failed)
		return;
	bool first = head(s);
	s->w->sample(&s->out, p, x, s->st);
	if (first || due(s))
		flush(s);
}

static void stream_free(struct pyd_stream *s)
{
	if (s->w->close)
		s->w->close(s->st);
	ZSTD_freeCCtx(s->z);
	free(s->zbuf);
	pyd_buf_free(&s->out);
	free(s);
}

enum pyd_err pyd_stream_open(struct pyd_profile *p,
                             const struct pyd_prof_format *f,
                             pyd_stream_sink sink, void *ctx,
                             struct pyd_stream **out)
{
	if (!f->stream)
		return PYD_E_USAGE;
	struct pyd_stream *s = calloc(1, sizeof *s);
	if (!s)
		return PYD_E_NOMEM;
	*s = (struct pyd_stream){.p = p, .w = f->stream, .sink = sink,
	                         .ctx = ctx, .flushed_us = p->meta.round_us};
	s->st = s->w->open ? s->w->open() : NULL;
	if (s->w->compressed && (s->z = ZSTD_createCCtx())) {
		ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel,
		                       ZSTD_LEVEL);
		/* A frame whose bytes were damaged fails, not misleads. */
		ZSTD_CCtx_setParameter(s->z, ZSTD_c_checksumFlag, 1);
	}
	if ((s->w->open && !s->st) || (s->w->compressed && !s->z)) {
		stream_free(s);
		return PYD_E_NOMEM;
	}
	p->on_sample = on_sample;
	p->on_sample_ctx = s;
	*out = s;
	return PYD_OK;
}

bool pyd_stream_tick(struct pyd_stream *s)
{
	return s->failed ? false : !due(s) || flush(s);
}

bool pyd_stream_close(struct pyd_stream *s)
{
	if (!s->failed) {
		head(s);
		if (s->w->tail)
			s->w->tail(&s->out, s->p, s->st);
	}
	bool ok = flush(s);
	s->p->on_sample = NULL;
	s->p->on_sample_ctx = NULL;
	stream_free(s);
	return ok;
}
