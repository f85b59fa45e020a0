/*
 * Compressed cores (decompress.h): each format's streaming decoder, from
 * the library made for it, between one read loop and one write loop.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include "decompress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>
#ifdef PYD_HAVE_LZMA
#include <lzma.h>
#endif
#ifdef PYD_HAVE_LZ4
#include <lz4frame.h>
#endif

#define CHUNK ((size_t)256 << 10)

/* One format's decoder: step consumes what it can of in (advancing *in,
 * *inlen; none left: the input's end) and writes up to *outlen bytes to
 * out (setting *outlen to how many); *end says whether what it decoded so
 * far is a whole stream, or it fails with a message. */
struct codec {
	const char *name;
	uint8_t magic[6];
	size_t nmagic;
	const char *library; /* NULL: built in */
	void *(*open)(void);
	const char *(*step)(void *st, const uint8_t **in, size_t *inlen,
			    uint8_t *out, size_t *outlen, bool *end);
	void (*close)(void *st);
};

/* ---- gzip (zlib) ---- */

static void *gz_open(void)
{
	z_stream *z = calloc(1, sizeof *z);
	if (z && inflateInit2(z, 16 + MAX_WBITS) != Z_OK) {
		free(z);
		return NULL;
	}
	return z;
}

static const char *gz_step(void *st, const uint8_t **in, size_t *inlen,
			   uint8_t *out, size_t *outlen, bool *end)
{
	z_stream *z = st;
	z->next_in = (Bytef *)*in;
	z->avail_in = (uInt)*inlen;
	z->next_out = out;
	z->avail_out = (uInt)*outlen;
	int rc = inflate(z, Z_NO_FLUSH);
	*outlen -= z->avail_out;
	*in = z->next_in;
	*inlen = z->avail_in;
	/* gzip files may hold several members, one after another: a member
	 * ended with more to come starts the next */
	*end = rc == Z_STREAM_END;
	if (rc == Z_STREAM_END && *inlen)
		inflateReset(z);
	if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
		return z->msg ? z->msg : "corrupt gzip stream";
	return NULL;
}

static void gz_close(void *st)
{
	inflateEnd(st);
	free(st);
}

/* ---- zstd ---- */

static void *zs_open(void)
{
	return ZSTD_createDStream();
}

static const char *zs_step(void *st, const uint8_t **in, size_t *inlen,
			   uint8_t *out, size_t *outlen, bool *end)
{
	ZSTD_inBuffer i = {*in, *inlen, 0};
	ZSTD_outBuffer o = {out, *outlen, 0};
	size_t rc = ZSTD_decompressStream(st, &o, &i);
	if (ZSTD_isError(rc))
		return ZSTD_getErrorName(rc);
	*in += i.pos;
	*inlen -= i.pos;
	*outlen = o.pos;
	*end = rc == 0; /* a frame ended, flushed */
	return NULL;
}

static void zs_close(void *st)
{
	ZSTD_freeDStream(st);
}

/* ---- xz (liblzma) ---- */

#ifdef PYD_HAVE_LZMA
static void *xz_open(void)
{
	lzma_stream *s = calloc(1, sizeof *s);
	if (s && lzma_stream_decoder(s, UINT64_MAX, LZMA_CONCATENATED) !=
		     LZMA_OK) {
		free(s);
		return NULL;
	}
	return s;
}

static const char *xz_step(void *st, const uint8_t **in, size_t *inlen,
			   uint8_t *out, size_t *outlen, bool *end)
{
	lzma_stream *s = st;
	s->next_in = *in;
	s->avail_in = *inlen;
	s->next_out = out;
	s->avail_out = *outlen;
	/* LZMA_CONCATENATED: the end is told by FINISH at the input's end */
	lzma_ret rc = lzma_code(s, *inlen ? LZMA_RUN : LZMA_FINISH);
	*outlen -= s->avail_out;
	*in = s->next_in;
	*inlen = s->avail_in;
	*end = rc == LZMA_STREAM_END;
	if (rc != LZMA_OK && rc != LZMA_STREAM_END && rc != LZMA_BUF_ERROR)
		return rc == LZMA_DATA_ERROR ? "corrupt xz stream"
		       : rc == LZMA_FORMAT_ERROR ? "not an xz stream"
						 : "xz decoding failed";
	return NULL;
}

static void xz_close(void *st)
{
	lzma_end(st);
	free(st);
}
#endif

/* ---- lz4 frames ---- */

#ifdef PYD_HAVE_LZ4
static void *lz_open(void)
{
	LZ4F_dctx *d;
	return LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))
		       ? NULL
		       : d;
}

static const char *lz_step(void *st, const uint8_t **in, size_t *inlen,
			   uint8_t *out, size_t *outlen, bool *end)
{
	size_t src = *inlen;
	size_t rc = LZ4F_decompress(st, out, outlen, *in, &src, NULL);
	if (LZ4F_isError(rc))
		return LZ4F_getErrorName(rc);
	*in += src;
	*inlen -= src;
	*end = rc == 0; /* a frame ended */
	return NULL;
}

static void lz_close(void *st)
{
	LZ4F_freeDecompressionContext(st);
}
#endif

static const struct codec codecs[] = {
    {"gzip", {0x1f, 0x8b}, 2, NULL, gz_open, gz_step, gz_close},
    {"zstd", {0x28, 0xb5, 0x2f, 0xfd}, 4, NULL, zs_open, zs_step, zs_close},
#ifdef PYD_HAVE_LZMA
    {"xz", {0xfd, '7', 'z', 'X', 'Z', 0}, 6, NULL, xz_open, xz_step, xz_close},
#else
    {"xz", {0xfd, '7', 'z', 'X', 'Z', 0}, 6, "liblzma", NULL, NULL, NULL},
#endif
#ifdef PYD_HAVE_LZ4
    {"lz4", {0x04, 0x22, 0x4d, 0x18}, 4, NULL, lz_open, lz_step, lz_close},
#else
    {"lz4", {0x04, 0x22, 0x4d, 0x18}, 4, "liblz4", NULL, NULL, NULL},
#endif
};

static const struct codec *codec_of(int fd)
{
	uint8_t head[6];
	if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head)
		return NULL;
	for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++)
		if (!memcmp(head, codecs[i].magic, codecs[i].nmagic))
			return &codecs[i];
	return NULL;
}

/* An unnamed file to decompress into: gone once closed. */
static int tmp_file(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = dir && *dir ? open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)
			     : -1;
	return fd >= 0 ? fd : open("/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC,
				   0600);
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Decompress all of in into out with c; the input must end where a
 * stream does. */
static enum pyd_err run_codec(const struct codec *c, int in, int out,
			      char *detail, size_t detailsz)
{
	uint8_t *ibuf = malloc(CHUNK), *obuf = malloc(CHUNK);
	void *st = c->open();
	const char *bad = NULL;
	bool whole = false;
	enum pyd_err err = !ibuf || !obuf || !st ? PYD_E_NOMEM : PYD_OK;
	while (!err) {
		ssize_t got = read(in, ibuf, CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			snprintf(detail, detailsz, "reading it: %s",
				 strerror(errno));
			err = PYD_E_NOTCORE;
			break;
		}
		const uint8_t *p = ibuf;
		size_t left = (size_t)got, n;
		do {
			size_t had = left;
			bool end;
			n = CHUNK;
			if ((bad = c->step(st, &p, &left, obuf, &n, &end)))
				break;
			/* a call that did nothing (zstd at the input's end
			 * awaits another frame) leaves what was said */
			whole = end || (left == had && !n && whole);
			if (n && !write_all(out, obuf, n)) {
				snprintf(detail, detailsz, "decompressing it "
					 "into a temporary file: %s",
					 strerror(errno ? errno : ENOSPC));
				err = PYD_E_WRITE;
			}
		} while (!err && (left || n == CHUNK || (!got && n)));
		if (bad) {
			snprintf(detail, detailsz, "a %s-compressed file, but "
				 "corrupt: %s", c->name, bad);
			err = PYD_E_NOTCORE;
		} else if (!err && !got) {
			if (!whole) {
				snprintf(detail, detailsz, "a %s-compressed "
					 "file cut short: its stream ends "
					 "early", c->name);
				err = PYD_E_NOTCORE;
			}
			break;
		}
	}
	if (st)
		c->close(st);
	free(ibuf);
	free(obuf);
	return err;
}

enum pyd_err pyd_decompress_fd(int *fd, const char **kind, char *detail,
			       size_t detailsz)
{
	const struct codec *c = codec_of(*fd);
	*kind = "";
	if (!c)
		return PYD_OK;
	*kind = c->name;
	if (!c->open) {
		snprintf(detail, detailsz, "a %s-compressed file, and this "
			 "pystack-dump was built without %s: decompress it "
			 "first", c->name, c->library);
		return PYD_E_NOTCORE;
	}
	int out = tmp_file();
	if (out < 0) {
		snprintf(detail, detailsz, "a %s-compressed file, and no "
			 "temporary file could be made to decompress it into "
			 "($TMPDIR, /var/tmp): %s", c->name, strerror(errno));
		return PYD_E_WRITE;
	}
	enum pyd_err err = lseek(*fd, 0, SEEK_SET) < 0 ? PYD_E_NOTCORE
			   : run_codec(c, *fd, out, detail, detailsz);
	if (err) {
		close(out);
		return err;
	}
	close(*fd);
	*fd = out;
	return PYD_OK;
}
