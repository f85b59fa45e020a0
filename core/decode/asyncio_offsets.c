/*
 * The _asyncio module's debug offsets (3.14+): parsing the block, and
 * finding it without the module's binary.
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

#include "asyncio_offsets.h"

/* The module's data (or the interpreter's) is far smaller: a bound on
 * what a corrupt mapping can make us read. */
#define MAX_SCAN (256u << 20)

static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
	return off < size && width <= size - off;
}

int pyd_asyncio_offsets_parse(const uint8_t *raw, size_t len,
			      struct pyd_asyncio_offsets *out)
{
	if (!raw || !out || len < PYD_ASYNCIO_OFFSETS_SIZE)
		return -1;
	struct pyd_asyncio_offsets o = {
		.task_size = pyd_u64_at(raw, 0),
		.task_name = pyd_u64_at(raw, 8),
		.task_awaited_by = pyd_u64_at(raw, 16),
		.task_is_task = pyd_u64_at(raw, 24),
		.task_awaited_by_is_set = pyd_u64_at(raw, 32),
		.task_coro = pyd_u64_at(raw, 40),
		.task_node = pyd_u64_at(raw, 48),
		.interp_size = pyd_u64_at(raw, 56),
		.interp_tasks_head = pyd_u64_at(raw, 64),
		.tstate_size = pyd_u64_at(raw, 72),
		.tstate_running_loop = pyd_u64_at(raw, 80),
		.tstate_running_task = pyd_u64_at(raw, 88),
		.tstate_tasks_head = pyd_u64_at(raw, 96),
	};
	uint64_t ts = o.task_size;
	/* Members of a Task lie past its PyObject header. */
	const uint64_t ptrs[] = { o.task_name, o.task_awaited_by, o.task_coro };
	if (ts < 32 || ts > MAX_TASK_SIZE)
		return -1;
	for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++)
		if (ptrs[i] < 16 || !fits(ptrs[i], 8, ts))
			return -1;
	if (o.task_node < 16 || !fits(o.task_node, 16, ts) ||
	    o.task_is_task < 16 || !fits(o.task_is_task, 1, ts) ||
	    o.task_awaited_by_is_set < 16 ||
	    !fits(o.task_awaited_by_is_set, 1, ts) ||
	    o.task_is_task == o.task_awaited_by_is_set ||
	    o.task_name == o.task_coro || o.task_name == o.task_awaited_by ||
	    o.task_coro == o.task_awaited_by)
		return -1;
	/* Offset 0 of both states is their list link (next / prev), so no
	 * asyncio member can be there. */
	if (!o.interp_tasks_head || !o.tstate_running_loop ||
	    !o.tstate_running_task || !o.tstate_tasks_head)
		return -1;
	if (o.interp_size == 0 || o.interp_size > MAX_INTERP_SIZE ||
	    !fits(o.interp_tasks_head, 16, o.interp_size))
		return -1;
	if (o.tstate_size == 0 || o.tstate_size > MAX_TSTATE_SIZE ||
	    !fits(o.tstate_running_loop, 8, o.tstate_size) ||
	    !fits(o.tstate_running_task, 8, o.tstate_size) ||
	    !fits(o.tstate_tasks_head, 16, o.tstate_size))
		return -1;
	o.task_state = o.task_is_task == o.task_awaited_by + 12
			       ? (int64_t)o.task_awaited_by + 8
			       : -1;
	*out = o;
	return 0;
}

static bool candidate_file(const struct pyd_session *s, const char *path)
{
	const char *base = strrchr(path, '/');
	return strcmp(path, s->rt.binary) == 0 ||
	       (base && strncmp(base + 1, "_asyncio.", 9) == 0);
}

/* A plausible offsets block, 8-aligned in buf. */
static uint64_t find_block(const uint8_t *buf, size_t n, uint64_t addr,
                           void *ctx)
{
	(void)ctx;
	for (size_t off = 0; off + PYD_ASYNCIO_OFFSETS_SIZE <= n; off += 8) {
		struct pyd_asyncio_offsets o;
		if (!pyd_asyncio_offsets_parse(buf + off, PYD_ASYNCIO_OFFSETS_SIZE,
		                               &o))
			return addr + off;
	}
	return 0;
}

uint64_t pyd_asyncio_find_block(struct pyd_session *s)
{
	const struct pyd_mapping *maps;
	size_t n;
	uint64_t found = 0;
	if (pyd_runtime_mappings(s->src, &maps, &n))
		return 0;
	for (size_t i = 0; i < n && !found; i++)
		if (maps[i].path && maps[i].perms[1] == 'w' &&
		    candidate_file(s, maps[i].path))
			found = pyd_scan(s->src, maps[i].start, maps[i].end,
			                 MAX_SCAN, find_block, NULL);
	return found;
}
