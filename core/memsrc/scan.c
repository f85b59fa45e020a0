/*
 * Scanning a range of target memory chunk by chunk (pyd_scan).
 */
#include <stdlib.h>

#include "memsrc.h"

/* What one read brings in: big enough to make few calls, small enough to
 * stay in cache. */
#define SCAN_CHUNK (64u << 10)

uint64_t pyd_scan(const struct pyd_memsrc *src, uint64_t start, uint64_t end,
                  uint64_t max, pyd_scan_fn *look, void *ctx)
{
	/* By length, not by address: a range that ends near 2^64 (a
	 * corrupt mapping or snapshot) must not wrap around. */
	uint64_t len = end > start ? end - start : 0;
	if (len > max)
		len = max;
	uint8_t *buf = malloc(SCAN_CHUNK);
	uint64_t found = 0;
	for (uint64_t done = 0; buf && !found && done < len;) {
		size_t n = len - done < SCAN_CHUNK ? (size_t)(len - done)
		                                   : SCAN_CHUNK;
		if (!src->read(src->ctx, start + done, buf, n))
			found = look(buf, n, start + done, ctx);
		done += n;
	}
	free(buf);
	return found;
}
