/*
 * Finding the _asyncio module's debug offsets without its binary (3.14+).
 *
 * With binaries, .AsyncioDebug is found by section name (runtime/elf.c).
 * A core copied off a server often has none; but the section is data of
 * the _asyncio module (3.14) or of the interpreter itself (3.15), in a
 * writable mapping the core holds.  The 104-byte block is recognised by
 * content: it must parse as a plausible set of offsets.  Only mappings of
 * those two files are scanned, which keeps both cost and the chance of a
 * false match small.
 */
#include <stdlib.h>
#include <string.h>

#include "asyncio_find.h"
#include "tasks.h"

#define CHUNK (64u * 1024)

static bool candidate_file(const struct pyd_session *s, const char *path)
{
	const char *base = strrchr(path, '/');
	return strcmp(path, s->rt.binary) == 0 ||
	       (base && strncmp(base + 1, "_asyncio.", 9) == 0);
}

static uint64_t scan(struct pyd_session *s, const struct pyd_mapping *m,
		     uint8_t *buf)
{
	for (uint64_t a = m->start; a < m->end; a += CHUNK) {
		size_t n = m->end - a < CHUNK ? (size_t)(m->end - a) : CHUNK;
		if (pyd_read(s->src, a, buf, n))
			continue;
		for (size_t off = 0; off + PYD_ASYNCIO_OFFSETS_SIZE <= n; off += 8) {
			struct pyd_asyncio_offsets o;
			if (!pyd_asyncio_offsets_parse(buf + off,
						       PYD_ASYNCIO_OFFSETS_SIZE, &o))
				return a + off;
		}
	}
	return 0;
}

uint64_t pyd_asyncio_find_block(struct pyd_session *s)
{
	const struct pyd_mapping *maps;
	size_t n;
	uint64_t found = 0;
	uint8_t *buf = malloc(CHUNK);
	if (!buf || pyd_runtime_mappings(s->src, &maps, &n)) {
		free(buf);
		return 0;
	}
	for (size_t i = 0; i < n && !found; i++)
		if (maps[i].path && maps[i].perms[1] == 'w' &&
		    candidate_file(s, maps[i].path))
			found = scan(s, &maps[i], buf);
	free(buf);
	return found;
}
