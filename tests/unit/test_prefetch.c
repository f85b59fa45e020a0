/*
 * The prefetching source (core/memsrc/prefetch.c) over a fake target of
 * two pages with an unreadable one between: what a pass batches, what a
 * dry run wants (a range once a pass), what a read-ahead batch keeps (as
 * it was read, not read again, within a bound), and that a range the
 * target cannot give is wanted once.  A unit test of the layer, not of
 * Python decoding.
 */
#include <stdint.h>
#include <string.h>

#include "../../core/memsrc/prefetch.h"
#include "check.h"

#define BASE 0x10000ull
#define HOLE (BASE + 4096) /* [HOLE, HOLE + 4096) cannot be read */
static uint8_t mem[32 * 4096];
static int reads; /* calls of the fake target's read */
/* [ZEROS, ZEROS + 64 MiB) reads as zeros: room for batches of megabytes. */
#define ZEROS 0x100000000ull

static enum pyd_err fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr >= ZEROS && addr - ZEROS <= (64ull << 20) &&
	    len <= (64ull << 20) - (addr - ZEROS)) {
		memset(buf, 0, len);
		return PYD_OK;
	}
	if (addr < BASE || addr - BASE > sizeof mem ||
	    len > sizeof mem - (addr - BASE) ||
	    (addr < HOLE + 4096 && addr + len > HOLE))
		return PYD_E_READ;
	memcpy(buf, mem + (addr - BASE), len);
	return PYD_OK;
}

static const struct pyd_memsrc fake = {.read = fake_read};

/* The word the fake target has at addr now. */
static uint64_t mem_word(uint64_t addr)
{
	uint64_t v;
	memcpy(&v, mem + (addr - BASE), sizeof v);
	return v;
}

static uint64_t word_at(const struct pyd_memsrc *src, uint64_t addr,
			enum pyd_err *err)
{
	uint64_t v = 0;
	*err = pyd_read(src, addr, &v, sizeof v);
	return v;
}

/* A sampler's passes: a read misses once, then comes from the batch. */
static void test_passes(void)
{
	struct pyd_prefetch p;
	enum pyd_err err;
	uint64_t was = mem_word(BASE + 8);
	pyd_prefetch_init(&p, &fake);
	CHECK_EQ(word_at(&p.layer.src, BASE + 8, &err), was);
	CHECK_EQ(err, PYD_OK);
	CHECK_EQ(p.nmissed, 1);
	CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
	reads = 0;
	mem[8] ^= 0xff; /* the batch holds the pass's moment */
	CHECK_EQ(word_at(&p.layer.src, BASE + 8, &err), was);
	CHECK_EQ(reads, 0);
	/* A read the target cannot give is not wanted again. */
	word_at(&p.layer.src, HOLE + 8, &err);
	CHECK_EQ(err, PYD_E_READ);
	CHECK_EQ(p.nmissed, 0);
	/* A pass drops a run no read used. */
	CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
	CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
	reads = 0;
	CHECK_EQ(word_at(&p.layer.src, BASE + 8, &err), mem_word(BASE + 8));
	CHECK_EQ(reads, 1);
	mem[8] ^= 0xff;
	pyd_prefetch_free(&p);
}

/* A dry run reads nothing: a miss fails and is wanted; with keep, what
 * one batch read stays in the next whether used or not; a range the
 * target cannot give is wanted only once. */
static void test_dry(void)
{
	struct pyd_prefetch p;
	enum pyd_err err;
	pyd_prefetch_init(&p, &fake);
	p.dry = p.keep = true;
	reads = 0;
	word_at(&p.layer.src, BASE + 16, &err);
	CHECK_EQ(err, PYD_E_READ);
	word_at(&p.layer.src, HOLE + 16, &err);
	CHECK_EQ(err, PYD_E_READ);
	CHECK_EQ(reads, 0);
	CHECK_EQ(p.nmissed, 2);
	pyd_prefetch_want(&p, BASE + 8192, 64); /* the third page */
	CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
	CHECK_EQ(word_at(&p.layer.src, BASE + 16, &err), mem_word(BASE + 16));
	CHECK_EQ(err, PYD_OK);
	word_at(&p.layer.src, HOLE + 16, &err);
	CHECK_EQ(err, PYD_E_READ);
	CHECK_EQ(p.nmissed, 0);
	/* What a batch read is kept as it was read, not read again; a new
	 * miss is read. */
	uint64_t was = mem_word(BASE + 16);
	mem[16] ^= 0xff;
	pyd_prefetch_want(&p, BASE + 8 * 4096, 8);
	reads = 0;
	CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
	CHECK_EQ(reads, 1);
	reads = 0;
	p.dry = false;
	word_at(&p.layer.src, BASE + 8192 + 8, &err); /* kept, unused */
	CHECK_EQ(err, PYD_OK);
	CHECK_EQ(word_at(&p.layer.src, BASE + 16, &err), was);
	CHECK_EQ(err, PYD_OK);
	CHECK_EQ(word_at(&p.layer.src, BASE + 8 * 4096, &err),
		 mem_word(BASE + 8 * 4096));
	CHECK_EQ(reads, 0);
	mem[16] ^= 0xff;
	pyd_prefetch_free(&p);
}

/* A range two reads of a pass miss is wanted once, both counted as
 * misses; a dry batch of reads wants every range it misses. */
static void test_wanted_once(void)
{
	struct pyd_prefetch p;
	enum pyd_err err;
	pyd_prefetch_init(&p, &fake);
	p.dry = p.keep = true;
	word_at(&p.layer.src, BASE + 64, &err);
	word_at(&p.layer.src, BASE + 64, &err);
	CHECK_EQ(p.nmissed, 1);
	CHECK_EQ(p.nfailed, 2);
	uint64_t a, b;
	struct pyd_iov v[2] = {{BASE + 8192, &a, 8}, {BASE + 12288, &b, 8}};
	size_t done = 9;
	CHECK_EQ(pyd_readv(&p.layer.src, v, 2, &done), PYD_OK);
	CHECK_EQ(done, 0);
	CHECK_EQ(p.nmissed, 3);
	CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
	CHECK_EQ(pyd_readv(&p.layer.src, v, 2, &done), PYD_OK);
	CHECK_EQ(done, 2);
	CHECK_EQ(a, mem_word(BASE + 8192));
	CHECK_EQ(b, mem_word(BASE + 12288));
	pyd_prefetch_free(&p);
}

/* Kept runs stay where the batches that read them put them, until those
 * hold more than a batch's worth: then a batch reads its kept runs again,
 * and what the batches before read is freed.  Each batch's runs come
 * before the last's, so the batch's bound (16 MiB) leaves earlier runs
 * out, and what they were read into is held for nothing. */
static void test_held_bound(void)
{
	struct pyd_prefetch p;
	enum pyd_err err;
	const size_t range = 256 << 10, per = 16; /* 4 MiB a batch */
	const int batches = 8;
	pyd_prefetch_init(&p, &fake);
	p.dry = p.keep = true;
	size_t wanted = 0, readall = 0, last = 0;
	for (int batch = 0; batch < batches; batch++) {
		for (size_t i = 0; i < per; i++, wanted++)
			pyd_prefetch_want(&p, ZEROS + (per * batches - 1 - wanted) *
						      2 * range,
					  range);
		reads = 0;
		CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
		if (reads > (int)per) { /* every run read again: the bound */
			readall++;
			CHECK_EQ(batch - (int)last >= 2, true);
			last = (size_t)batch;
		}
		/* The earlier batches' 16 MiB and this one's 4. */
		CHECK_EQ(p.held_bytes <= (20u << 20), true);
		/* Mapped, not all touched: an arena's chunk is as large as
		 * all before it. */
		CHECK_EQ(p.held.total <= (48u << 20), true);
	}
	CHECK_EQ(readall, 2);
	p.dry = false;
	reads = 0;
	CHECK_EQ(word_at(&p.layer.src, ZEROS + 8, &err), 0);
	CHECK_EQ(err, PYD_OK);
	CHECK_EQ(reads, 0);
	pyd_prefetch_free(&p);
}

/* Enough runs for the page table (256 and up), batch after batch: a
 * table left from the last batch must not answer for this one. */
static void test_many_runs(void)
{
	struct pyd_prefetch p;
	enum pyd_err err;
	pyd_prefetch_init(&p, &fake);
	for (int round = 0; round < 3; round++) {
		/* 300 words 320 bytes apart, past the hole: 300 runs. */
		for (uint64_t i = 0; i < 300; i++)
			pyd_prefetch_want(&p, BASE + 8192 + i * 320 + (uint64_t)round * 8,
					  8);
		CHECK_EQ(pyd_prefetch_pass(&p), PYD_OK);
		CHECK_EQ(p.nruns >= 300, 1);
		reads = 0;
		for (uint64_t i = 0; i < 300; i += 7) {
			uint64_t at = BASE + 8192 + i * 320 + (uint64_t)round * 8;
			CHECK_EQ(word_at(&p.layer.src, at, &err), mem_word(at));
			CHECK_EQ(err, PYD_OK);
		}
		CHECK_EQ(reads, 0);
		/* A word past the runs is not in the batch. */
		word_at(&p.layer.src, BASE + 8192 + 300 * 320 + 4096 * (uint64_t)(round + 1),
			&err);
		CHECK_EQ(reads, 1);
	}
	pyd_prefetch_free(&p);
}

int main(void)
{
	for (size_t i = 0; i < sizeof mem; i++)
		mem[i] = (uint8_t)i;
	test_passes();
	test_dry();
	test_many_runs();
	test_wanted_once();
	test_held_bound();
	printf("%d checks, %d failed\n", check_count, check_failures);
	return check_failures != 0;
}
