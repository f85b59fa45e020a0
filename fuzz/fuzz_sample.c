/*
 * libFuzzer: the sampler's rounds over a snapshot whose memory changes
 * between rounds, as a live target's does: thread lists that gain, lose
 * or loop their nodes, frames rewritten under a cached prediction.
 *
 * Input: a snapshot file as is (sampled unchanged), or
 *	u8 mode (wall, gil, async, greenlet), u32 snapshot length, the snapshot,
 *	then patches: u16 read index, u16 offset, u8 length, the bytes.
 * A patch lands on memory the previous round read (its read number
 * index, at offset into it), so mutations hit what the sampler looks at;
 * one patch is applied after each round, every round at most ROUNDS.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/memsrc/layer.h"
#include "../core/memsrc/snapshot.h"
#include "../core/profile/sampler.h"
#include "../core/report/profiles.h"
#include "../core/report/report.h"
#include "pipeline.h"

#define ROUNDS 8
#define MAX_READS 4096
#define MAX_PATCHES 64

struct patch {
	uint64_t addr;
	uint8_t len, bytes[255];
};

/* The snapshot's memory, with the patches applied so far laid over it. */
struct overlay {
	struct pyd_layer layer; /* read through layer.src */
	struct patch patches[MAX_PATCHES];
	size_t npatches;
	uint64_t reads[MAX_READS]; /* addresses read this round */
	size_t nreads;
};

static void lay_over(const struct overlay *o, uint64_t addr, uint8_t *buf,
		     size_t len)
{
	for (size_t i = 0; i < o->npatches; i++) {
		const struct patch *p = &o->patches[i];
		for (size_t j = 0; j < p->len; j++)
			if (p->addr + j >= addr && p->addr + j - addr < len)
				buf[p->addr + j - addr] = p->bytes[j];
	}
}

static void note_read(struct overlay *o, uint64_t addr)
{
	if (o->nreads < MAX_READS)
		o->reads[o->nreads++] = addr;
}

static enum pyd_err o_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct overlay *o = ctx;
	note_read(o, addr);
	enum pyd_err err = pyd_read(o->layer.inner, addr, buf, len);
	if (!err)
		lay_over(o, addr, buf, len);
	return err;
}

static enum pyd_err o_readv(void *ctx, const struct pyd_iov *v, size_t n,
			    size_t *done)
{
	struct overlay *o = ctx;
	enum pyd_err err = pyd_readv(o->layer.inner, v, n, done);
	for (size_t i = 0; i < n; i++) {
		note_read(o, v[i].addr);
		if (i < *done)
			lay_over(o, v[i].addr, v[i].buf, v[i].len);
	}
	return err;
}

/* The next patch of the input onto what the last round read. */
static void next_patch(struct overlay *o, const uint8_t **p, size_t *left)
{
	if (*left < 5 || o->npatches == MAX_PATCHES || !o->nreads)
		return;
	uint16_t index, offset;
	memcpy(&index, *p, 2);
	memcpy(&offset, *p + 2, 2);
	struct patch *pt = &o->patches[o->npatches];
	pt->len = (*p)[4];
	if (pt->len > *left - 5)
		pt->len = (uint8_t)(*left - 5);
	memcpy(pt->bytes, *p + 5, pt->len);
	pt->addr = o->reads[index % o->nreads] + offset % 512;
	o->npatches++;
	*p += 5 + pt->len;
	*left -= 5 + pt->len;
}

static void sample(const struct pyd_memsrc *snap, const struct pyd_runtime *rt,
		   enum pyd_sample_mode mode, const uint8_t *p, size_t left)
{
	struct overlay *o = calloc(1, sizeof *o);
	struct pyd_profile *prof = pyd_profile_new(true, 4096);
	struct pyd_session *s = NULL;
	struct pyd_sampler *sp = NULL;
	char detail[256];
	if (!o || !prof)
		goto out;
	pyd_layer_init(&o->layer, snap, o_read, o_readv);
	uint32_t proc = pyd_profile_process(prof, 1, 0, NULL, NULL);
	if (proc == PYD_PROF_NONE ||
	    pyd_session_open(&o->layer.src, rt, &s, detail, sizeof detail) ||
	    pyd_sampler_open(s, mode, prof, proc, &sp))
		goto out;
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned n;
		o->nreads = 0;
		if (pyd_sample(sp, &n) == PYD_E_EXITED)
			break;
		next_patch(o, &p, &left);
	}
	pyd_profile_finish(prof);
	struct pyd_buf b = {0};
	struct pyd_prof_opts po = {0};
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++)
		pyd_report_prof(&b, prof, f, &po);
	pyd_buf_free(&b);
out:
	pyd_sampler_close(sp);
	pyd_session_close(s);
	pyd_profile_free(prof);
	free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum pyd_sample_mode modes[] = {
	    PYD_SAMPLE_WALL, PYD_SAMPLE_GIL, PYD_SAMPLE_ASYNC,
	    PYD_SAMPLE_GREENLET};
	enum pyd_sample_mode mode = PYD_SAMPLE_WALL;
	const uint8_t *snapshot = data, *patches = data + size;
	size_t len = size;
	if (size >= 5 && memcmp(data, "PYDSNAP\n", size < 8 ? size : 8)) {
		uint32_t n;
		memcpy(&n, data + 1, 4);
		mode = modes[data[0] % (sizeof modes / sizeof *modes)];
		snapshot = data + 5;
		len = n < size - 5 ? n : size - 5;
		patches = snapshot + len;
	}
	struct pyd_snapshot *snap;
	char detail[256];
	if (pyd_snapshot_open(fuzz_file(snapshot, len), &snap, detail,
			      sizeof detail))
		return 0;
	sample(pyd_snapshot_memsrc(snap), pyd_snapshot_runtime(snap), mode,
	       patches, (size_t)(data + size - patches));
	pyd_snapshot_close(snap);
	return 0;
}
