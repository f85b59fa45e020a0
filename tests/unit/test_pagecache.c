/*
 * The page cache source (core/memsrc/pagecache.c) over a fake target of
 * 32 pages, the fourth unreadable: a miss reads one page, or with around
 * the aligned block holding it in one call (a block the target cannot
 * give whole falls back to the page alone); a batch of reads takes what
 * the cache holds from it and reads the rest in one call; the cache's
 * own pages are taken in the order first used, and a clear forgets what
 * they hold.  A unit test of the layer, not of Python decoding.
 */
#include <stdint.h>
#include <string.h>

#include "../../core/memsrc/pagecache.h"
#include "check.h"

#define BASE 0x100000ull
#define HOLE (BASE + 3 * 4096) /* [HOLE, HOLE + 4096) cannot be read */
static uint8_t mem[32 * 4096];
static int reads, readvs; /* calls of the fake target */

static bool readable(uint64_t addr, size_t len)
{
	return addr >= BASE && addr - BASE <= sizeof mem &&
	       len <= sizeof mem - (addr - BASE) &&
	       !(addr < HOLE + 4096 && addr + len > HOLE);
}

static enum pyd_err fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (!readable(addr, len))
		return PYD_E_READ;
	memcpy(buf, mem + (addr - BASE), len);
	return PYD_OK;
}

static enum pyd_err fake_readv(void *ctx, const struct pyd_iov *v, size_t n,
			       size_t *done)
{
	(void)ctx;
	readvs++;
	for (*done = 0; *done < n && readable(v[*done].addr, v[*done].len);
	     ++*done)
		memcpy(v[*done].buf, mem + (v[*done].addr - BASE), v[*done].len);
	return PYD_OK;
}

static const struct pyd_memsrc fake = {.read = fake_read, .readv = fake_readv};

static uint64_t word(const struct pyd_memsrc *src, uint64_t addr, enum pyd_err *err)
{
	uint64_t v = 0;
	*err = pyd_read(src, addr, &v, sizeof v);
	return v;
}

static uint64_t mem_word(uint64_t addr)
{
	uint64_t v;
	memcpy(&v, mem + (addr - BASE), sizeof v);
	return v;
}

/* A miss reads the block of `around` pages holding it, once. */
static void test_around(void)
{
	struct pyd_pagecache c;
	enum pyd_err err;
	CHECK_EQ(pyd_pagecache_init(&c, &fake, 64), true);
	c.around = 4;
	reads = readvs = 0;
	uint64_t at = BASE + 9 * 4096 + 16; /* block [8, 12) */
	CHECK_EQ(word(&c.layer.src, at, &err), mem_word(at));
	CHECK_EQ(err, PYD_OK);
	CHECK_EQ(readvs, 1);
	for (int pg = 8; pg < 12; pg++)
		CHECK_EQ(word(&c.layer.src, BASE + pg * 4096ull, &err),
			 mem_word(BASE + pg * 4096ull));
	CHECK_EQ(readvs + reads, 1);
	/* Block [0, 4) holds the hole after page 2: page 2 is read whole
	 * in the block, page 3 fails as it would without the cache. */
	readvs = reads = 0;
	at = BASE + 2 * 4096;
	CHECK_EQ(word(&c.layer.src, at, &err), mem_word(at));
	CHECK_EQ(readvs, 1);
	CHECK_EQ(reads, 0);
	word(&c.layer.src, HOLE, &err);
	CHECK_EQ(err, PYD_E_READ);
	/* A block the hole cuts short before the page missed: that page
	 * is read alone. */
	pyd_pagecache_free(&c);
	CHECK_EQ(pyd_pagecache_init(&c, &fake, 64), true);
	c.around = 8; /* block [0, 8): the hole is its fourth page */
	readvs = reads = 0;
	at = BASE + 6 * 4096;
	CHECK_EQ(word(&c.layer.src, at, &err), mem_word(at));
	CHECK_EQ(err, PYD_OK);
	CHECK_EQ(readvs, 1);
	CHECK_EQ(reads, 1); /* the block stopped at the hole */
	pyd_pagecache_free(&c);
}

/* A batch: held ranges from the cache, the rest in one call, as asked. */
static void test_readv(void)
{
	struct pyd_pagecache c;
	enum pyd_err err;
	uint64_t a = 0, b = 0, d = 0;
	CHECK_EQ(pyd_pagecache_init(&c, &fake, 64), true);
	word(&c.layer.src, BASE + 16 * 4096, &err); /* page 16 held */
	reads = readvs = 0;
	struct pyd_iov v[3] = {{BASE + 16 * 4096 + 8, &a, 8},
			       {BASE + 20 * 4096 + 8, &b, 8},
			       {HOLE + 8, &d, 8}};
	size_t done = 0;
	CHECK_EQ(pyd_readv(&c.layer.src, v, 3, &done), PYD_OK);
	CHECK_EQ(done, 2);
	CHECK_EQ(a, mem_word(BASE + 16 * 4096 + 8));
	CHECK_EQ(b, mem_word(BASE + 20 * 4096 + 8));
	CHECK_EQ(readvs, 1);
	CHECK_EQ(reads, 0);
	pyd_pagecache_free(&c);
}

/* Slots take pages of data in the order they are first filled, so few
 * pages read touch few of ours; a clear forgets them and keeps them. */
static void test_compact(void)
{
	struct pyd_pagecache c;
	enum pyd_err err;
	CHECK_EQ(pyd_pagecache_init(&c, &fake, 1024), true);
	uint64_t far = BASE + 30 * 4096, near = BASE + 1 * 4096;
	CHECK_EQ(word(&c.layer.src, far, &err), mem_word(far));
	CHECK_EQ(word(&c.layer.src, near, &err), mem_word(near));
	CHECK_EQ(c.used, 2);
	CHECK_EQ(c.at[(far / 4096) & 1023], 1);
	CHECK_EQ(c.at[(near / 4096) & 1023], 2);
	pyd_pagecache_clear(&c);
	reads = readvs = 0;
	mem[30 * 4096] ^= 0xff; /* the target changed: seen after a clear */
	CHECK_EQ(word(&c.layer.src, far, &err), mem_word(far));
	CHECK_EQ(reads, 1);
	CHECK_EQ(c.used, 2);
	mem[30 * 4096] ^= 0xff;
	pyd_pagecache_free(&c);
}

int main(void)
{
	for (size_t i = 0; i < sizeof mem; i++)
		mem[i] = (uint8_t)(i * 7);
	test_around();
	test_compact();
	test_readv();
	printf("%d checks, %d failed\n", check_count, check_failures);
	return check_failures != 0;
}
