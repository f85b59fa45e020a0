/*
 * Finding _PyRuntime without any binary (3.13+).
 *
 * _PyRuntime starts with _Py_DebugOffsets, whose first 8 bytes are the
 * cookie "xdebugpy" followed by PY_VERSION_HEX.  _PyRuntime is initialised
 * data, so it lives in a writable file-backed mapping (the .data of the
 * executable or libpython), which a core file always contains.  Scanning
 * those for the cookie finds the runtime even when the executable and
 * libpython are gone -- the usual state of a core copied off a server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* Writable file-backed mappings bigger than this are not a Python's data
 * segment; skipping them bounds the scan on odd targets. */
#define MAX_SCAN (256u << 20)

static bool plausible_version(uint64_t hex)
{
	return (hex >> 24) == 3 && ((hex >> 16) & 0xff) >= 13 &&
	       ((hex >> 16) & 0xff) < 100;
}

/* The cookie and a plausible version after it, 8-aligned in buf. */
static uint64_t find_cookie(const uint8_t *buf, size_t n, uint64_t addr,
                            void *ctx)
{
	(void)ctx;
	for (size_t off = 0; off + 16 <= n; off += 8) {
		if (memcmp(buf + off, "xdebugpy", 8) != 0)
			continue;
		if (plausible_version(pyd_u64_at(buf, off + 8)))
			return addr + off;
	}
	return 0;
}

/* Whether any mapping names its file: if none does (a core that could not
 * say), the data segment is among the nameless ones, and they are scanned. */
static bool any_file(const struct pyd_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (maps[i].path)
			return true;
	return false;
}

enum pyd_err pyd_runtime_find_cookie(const struct pyd_memsrc *src,
				     struct pyd_runtime *rt)
{
	const struct pyd_mapping *maps;
	size_t n;
	enum pyd_err err = pyd_runtime_mappings(src, &maps, &n);
	if (err)
		return err;
	memset(rt, 0, sizeof *rt);
	bool found = false, files = any_file(maps, n);
	for (size_t i = 0; i < n && !found; i++) {
		const struct pyd_mapping *m = &maps[i];
		uint64_t at = (m->path || !files) && m->perms[1] == 'w' &&
		                      m->end - m->start <= MAX_SCAN
		                  ? pyd_scan(src, m->start, m->end, MAX_SCAN,
		                             find_cookie, NULL)
		                  : 0;
		if (!at)
			continue;
		uint64_t hex;
		if (src->read(src->ctx, at + 8, &hex, sizeof hex))
			continue;
		rt->runtime_addr = at;
		rt->major = 3;
		rt->minor = (int)((hex >> 16) & 0xff);
		snprintf(rt->binary, sizeof rt->binary, "%s",
		         m->path ? m->path : "");
		found = true;
	}
	return found ? PYD_OK : PYD_E_NOTPYTHON;
}
