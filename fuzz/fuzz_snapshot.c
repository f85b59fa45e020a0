/*
 * libFuzzer: a snapshot file, decoded as `pystack-dump --snapshot FILE
 * --locals` and `--tasks` decode it, every report written.
 *
 * Snapshots carry checksums (the header's, each section's): a mutated
 * input would mostly be refused right there.  The harness puts the sizes
 * and checksums right first, as a writer would have, so the mutations
 * reach the decoders -- the readers of hostile memory this is for.  The
 * checksum checks themselves are tested by tests/test_bad_input.py.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../core/memsrc/snapshot.h"
#include "pipeline.h"

/* The format's layout (core/memsrc/snapshot.c). */
#define HEADER_MIN 32u
#define HEADER_MAX 65536u
#define CRC_AT 24u
#define SECT_HEAD 16u
#define SECT_TAIL 4u

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void repair(uint8_t *b, size_t n)
{
	if (n < HEADER_MIN)
		return;
	uint64_t size = n;
	memcpy(b + 16, &size, 8);
	uint32_t hsize = get32(b + 12);
	if (hsize < HEADER_MIN || hsize > HEADER_MAX || hsize > n)
		return;
	put32(b + CRC_AT, 0);
	put32(b + CRC_AT, (uint32_t)crc32(0, b, hsize));
	for (uint64_t off = hsize; n - off >= SECT_HEAD + SECT_TAIL;) {
		uint64_t len;
		memcpy(&len, b + off + 8, 8);
		if (len > n - off - SECT_HEAD - SECT_TAIL)
			return;
		put32(b + off + SECT_HEAD + len,
		      (uint32_t)crc32(0, b + off, (uInt)(SECT_HEAD + len)));
		off += SECT_HEAD + len + SECT_TAIL;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		return 0;
	memcpy(b, data, size);
	repair(b, size);
	struct pyd_snapshot *snap;
	char detail[256];
	const char *path = fuzz_file(b, size);
	free(b);
	if (pyd_snapshot_open(path, &snap, detail, sizeof detail))
		return 0;
	fuzz_pipeline(pyd_snapshot_memsrc(snap), pyd_snapshot_runtime(snap));
	pyd_snapshot_close(snap);
	return 0;
}
