/*
 * Snapshot files: recording through a fake memory source, the round trip,
 * and hostile files (truncated, flipped, forged with valid checksums).
 * A unit test of the format, not of Python decoding.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../core/memsrc/snapshot.h"
#include "../../core/runtime/runtime.h"
#include "check.h"

#define CHECK_STR(got, want) CHECK_EQ(strcmp((got), (want)), 0)
#define CHECK_HAS(s, sub)    CHECK_EQ(strstr((s), (sub)) != NULL, 1)

/* ---- A fake target: one page at a fake address ---- */

#define BASE 0x7f0000001000ull
static uint8_t mem[4096];

static enum pyd_err fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > sizeof mem ||
	    len > sizeof mem - (addr - BASE))
		return PYD_E_READ;
	memcpy(buf, mem + (addr - BASE), len);
	return PYD_OK;
}

static struct pyd_mapping fake_maps[] = {
	{BASE, BASE + 4096, 0x1000, 1234, 8, 1, "rw-p", "/usr/bin/python3.12"},
	{BASE + 4096, BASE + 8192, 0, 0, 0, 0, "r--p", NULL},
};

static enum pyd_err fake_mappings(void *ctx, const struct pyd_mapping **maps,
				  size_t *n)
{
	(void)ctx;
	*maps = fake_maps;
	*n = 2;
	return PYD_OK;
}

/* Two listings: the snapshot must keep the last one. */
static const struct pyd_os_thread threads_a[] = {
	{100, "main", PYD_RUN_RUNNING},
	{101, "worker", PYD_RUN_IDLE},
	{102, "", PYD_RUN_UNKNOWN},
};
static const struct pyd_os_thread threads_b[] = {
	{100, "main", PYD_RUN_IDLE},
	{103, "a-name-of-exactly-31-characters", PYD_RUN_RUNNING},
};
static int nlistings;

static enum pyd_err fake_threads(void *ctx, const struct pyd_os_thread **t,
				 size_t *n)
{
	(void)ctx;
	bool first = nlistings++ == 0;
	*t = first ? threads_a : threads_b;
	*n = first ? 3 : 2;
	return PYD_OK;
}

static enum pyd_err fake_symbol(void *ctx, const char *name, uint64_t *addr)
{
	(void)ctx;
	*addr = strcmp(name, "_PyRuntime") == 0 ? BASE + 0x40 : 0;
	return *addr ? PYD_OK : PYD_E_NOTPYTHON;
}

static int fake_open_file(void *ctx, const struct pyd_mapping *m, char *used,
			  size_t usedsz)
{
	(void)ctx;
	snprintf(used, usedsz, "%s", m->path ? m->path : "");
	return 42;
}

static const struct pyd_memsrc fake = {
	.read = fake_read,
	.mappings = fake_mappings,
	.threads = fake_threads,
	.symbol = fake_symbol,
	.open_file = fake_open_file,
};

static const struct pyd_runtime fake_rt = {
	.binary = "/usr/bin/python3.12",
	.runtime_addr = BASE + 0x40,
	.py_version_addr = BASE + 0x8,
	.tstate_current_addr = 0x1122334455667788ull,
	.interp_head_addr = 0xfffffffffffffff0ull,
	.major = 3,
	.minor = 12,
	.version = "3.12.1",
	.debug_build = true,
};

/* ---- Files ---- */

static char dir[64];

static const char *tmp_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static uint8_t *load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = malloc(1 << 20);
	*len = f && b ? fread(b, 1, 1 << 20, f) : 0;
	if (f)
		fclose(f);
	return b;
}

static void save(const char *path, const uint8_t *b, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(b, 1, len, f);
		fclose(f);
	}
}

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlink(tmp_path(e->d_name));
	if (d)
		closedir(d);
	rmdir(dir);
}

static int count_files(void)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* ---- The format, independently of the reader: to forge files ---- */

static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (c & 1 ? 0xedb88320u : 0);
	}
	return ~c;
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static uint64_t get64(const uint8_t *b)
{
	return get32(b) | (uint64_t)get32(b + 4) << 32;
}

static void set32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> 8 * i);
}

static void set64(uint8_t *b, uint64_t v)
{
	set32(b, (uint32_t)v);
	set32(b + 4, (uint32_t)(v >> 32));
}

/* File size and header CRC for a file of len bytes. */
static void fix_header(uint8_t *b, size_t len)
{
	set64(b + 16, len);
	set32(b + 24, 0);
	set32(b + 24, crc32(b, get32(b + 12)));
}

static void fix_section(uint8_t *b, size_t len, size_t off)
{
	uint64_t n = get64(b + off + 8);
	if (off + 20 <= len && n <= len - off - 20)
		set32(b + off + 16 + n, crc32(b + off, 16 + n));
}

/* Offset of the first section of this type, 0 if none. */
static size_t find_section(const uint8_t *b, size_t len, uint32_t type)
{
	for (size_t off = get32(b + 12); off + 20 <= len;
	     off += 20 + get64(b + off + 8))
		if (get32(b + off) == type)
			return off;
	return 0;
}

enum { META = 1, RUNTIME, MAPPINGS, THREADS, MEMORY };

static char detail[512];

static enum pyd_err open_bytes(const uint8_t *b, size_t len,
			       struct pyd_snapshot **s)
{
	save(tmp_path("forged"), b, len);
	detail[0] = 0;
	return pyd_snapshot_open(tmp_path("forged"), s, detail, sizeof detail);
}

/* Must be refused, with a reason; returns the reason. */
static const char *rejected(const uint8_t *b, size_t len)
{
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(open_bytes(b, len, &s), PYD_E_SNAPSHOT);
	CHECK_EQ(s == NULL, 1);
	CHECK_EQ(detail[0] != 0, 1);
	pyd_snapshot_close(s);
	return detail;
}

/* ---- Recording and round trip ---- */

static const struct {
	uint64_t off, len;
} reads[] = {
	{0x10, 0x10},  {0x20, 0x10},  /* adjacent: one run */
	{0x18, 0x28},                 /* overlapping: [0x10, 0x40) */
	{0x100, 8},                   /* alone */
	{0x200, 0x10}, {0x220, 0x10}, {0x240, 0x10},
	{0x1f0, 0x70},                /* swallows three: [0x1f0, 0x260) */
	{0x300, 4},    {0x2fc, 4},    /* touching from below */
	{0x400, 0x10}, {0x400, 0x10}, /* the same twice */
	{0x500, 8},    {0x504, 2},    /* inside */
};
/* Merged: [0x10,0x40) [0x100,0x108) [0x1f0,0x260) [0x2fc,0x304)
 * [0x400,0x410) [0x500,0x508) */
#define NRUNS 6

static void fill_mem(void)
{
	for (size_t i = 0; i < sizeof mem; i++)
		mem[i] = (uint8_t)(i * 7 + 3);
}

static bool read_ok(const struct pyd_memsrc *src, uint64_t off, size_t len)
{
	uint8_t buf[256];
	return src->read(src->ctx, BASE + off, buf, len) == PYD_OK &&
	       memcmp(buf, mem + off, len) == 0;
}

static void record_fake(const char *path)
{
	struct pyd_recorder *r;
	CHECK_EQ(pyd_recorder_new(&fake, &r), PYD_OK);
	const struct pyd_memsrc *src = pyd_recorder_memsrc(r);
	char used[64];
	CHECK_EQ(src->open_file(src->ctx, fake_maps, used, sizeof used), 42);
	CHECK_STR(used, fake_maps[0].path);
	uint64_t sym;
	CHECK_EQ(src->symbol(src->ctx, "_PyRuntime", &sym), PYD_OK);
	CHECK_EQ(sym, BASE + 0x40);
	uint8_t buf[256];
	for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
		CHECK_EQ(pyd_read(src, BASE + reads[i].off, buf, reads[i].len),
			 PYD_OK);
	/* Failures pass through and are not recorded. */
	CHECK_EQ(pyd_read(src, BASE - 8, buf, 16), PYD_E_READ);
	CHECK_EQ(pyd_read(src, BASE + 4090, buf, 16), PYD_E_READ);
	/* Read again after a change: the latest bytes win. */
	mem[0x404] ^= 0xff;
	CHECK_EQ(pyd_read(src, BASE + 0x400, buf, 0x10), PYD_OK);
	const struct pyd_mapping *m;
	const struct pyd_os_thread *t;
	size_t n;
	CHECK_EQ(src->mappings(src->ctx, &m, &n), PYD_OK);
	CHECK_EQ(src->threads(src->ctx, &t, &n), PYD_OK);
	CHECK_EQ(src->threads(src->ctx, &t, &n), PYD_OK);
	CHECK_EQ(n, 2);
	pyd_recorder_set_source_kind(r, "live");
	CHECK_EQ(pyd_snapshot_write(r, &fake_rt, 4242, path, detail,
				    sizeof detail),
		 PYD_OK);
	pyd_recorder_free(r);
}

static void check_memory(const struct pyd_memsrc *src)
{
	for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
		CHECK_EQ(read_ok(src, reads[i].off, reads[i].len), true);
	CHECK_EQ(read_ok(src, 0x10, 0x30), true);
	CHECK_EQ(read_ok(src, 0x1f0, 0x70), true);
	CHECK_EQ(read_ok(src, 0x2fc, 8), true);
	CHECK_EQ(read_ok(src, 0x400, 0x10), true); /* the changed byte */
	CHECK_EQ(read_ok(src, 0x25f, 1), true);
	CHECK_EQ(read_ok(src, 0x0f, 1), false);    /* just before */
	CHECK_EQ(read_ok(src, 0x40, 1), false);    /* just after */
	CHECK_EQ(read_ok(src, 0x3f, 2), false);    /* straddles the end */
	CHECK_EQ(read_ok(src, 0x0f, 2), false);    /* straddles the start */
	CHECK_EQ(read_ok(src, 0x108, 1), false);
	CHECK_EQ(read_ok(src, 0x30, 0xe0), false); /* spans a gap */
	CHECK_EQ(read_ok(src, 0x800, 8), false);
	uint8_t b;
	CHECK_EQ(src->read(src->ctx, 0, &b, 1), PYD_E_READ);
	CHECK_EQ(src->read(src->ctx, UINT64_MAX, &b, 1), PYD_E_READ);
	CHECK_EQ(src->read(src->ctx, BASE + 0x10, &b, 0), PYD_OK);
	CHECK_EQ(src->read(src->ctx, BASE + 0x10, &b, SIZE_MAX), PYD_E_READ);
}

static void check_lists(const struct pyd_memsrc *src)
{
	const struct pyd_mapping *m;
	const struct pyd_os_thread *t;
	size_t n = 0;
	CHECK_EQ(src->mappings(src->ctx, &m, &n), PYD_OK);
	CHECK_EQ(n, 2);
	for (size_t i = 0; i < n && i < 2; i++) {
		const struct pyd_mapping *w = &fake_maps[i];
		CHECK_EQ(m[i].start, w->start);
		CHECK_EQ(m[i].end, w->end);
		CHECK_EQ(m[i].offset, w->offset);
		CHECK_EQ(m[i].inode, w->inode);
		CHECK_EQ(m[i].dev_major, w->dev_major);
		CHECK_EQ(m[i].dev_minor, w->dev_minor);
		CHECK_STR(m[i].perms, w->perms);
		CHECK_EQ(m[i].path == NULL, w->path == NULL);
	}
	CHECK_STR(m[0].path, fake_maps[0].path);
	CHECK_EQ(src->threads(src->ctx, &t, &n), PYD_OK);
	CHECK_EQ(n, 2);
	for (size_t i = 0; i < n && i < 2; i++) {
		CHECK_EQ(t[i].tid, threads_b[i].tid);
		CHECK_STR(t[i].name, threads_b[i].name);
		CHECK_EQ(t[i].run, threads_b[i].run);
	}
	CHECK_EQ(src->symbol == NULL, 1);
	CHECK_EQ(src->open_file == NULL, 1);
}

static void check_runtime(const struct pyd_snapshot *s, time_t t0)
{
	const struct pyd_runtime *rt = pyd_snapshot_runtime(s);
	CHECK_STR(rt->binary, fake_rt.binary);
	CHECK_EQ(rt->runtime_addr, fake_rt.runtime_addr);
	CHECK_EQ(rt->py_version_addr, fake_rt.py_version_addr);
	CHECK_EQ(rt->tstate_current_addr, fake_rt.tstate_current_addr);
	CHECK_EQ(rt->interp_head_addr, fake_rt.interp_head_addr);
	CHECK_EQ(rt->major, 3);
	CHECK_EQ(rt->minor, 12);
	CHECK_STR(rt->version, "3.12.1");
	CHECK_EQ(rt->debug_build, true);
	CHECK_EQ(pyd_snapshot_pid(s), 4242);
	const struct pyd_snapshot_meta *m = pyd_snapshot_meta(s);
	CHECK_STR(m->source_kind, "live");
	CHECK_EQ(strncmp(m->tool_version, "pystack-dump ", 13), 0);
	CHECK_EQ(m->created >= t0 && m->created <= time(NULL), true);
}

static void round_trip(const char *path)
{
	time_t t0 = time(NULL);
	fill_mem();
	record_fake(path);
	struct stat st;
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(st.st_mode & 0777, 0600);
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(pyd_snapshot_open(path, &s, detail, sizeof detail), PYD_OK);
	if (!s)
		return;
	check_memory(pyd_snapshot_memsrc(s));
	check_lists(pyd_snapshot_memsrc(s));
	check_runtime(s, t0);
	pyd_snapshot_close(s);
	size_t len;
	uint8_t *b = load(path, &len);
	size_t mo = find_section(b, len, MEMORY);
	CHECK_EQ(mo != 0, 1);
	CHECK_EQ(get64(b + mo + 16), NRUNS);
	free(b);
}

/* Random reads against a shadow copy: the runs in the file must be
 * exactly the maximal runs of bytes read, holding their latest values. */
static void random_reads(void)
{
	static uint8_t seen[sizeof mem], latest[sizeof mem];
	memset(seen, 0, sizeof seen);
	struct pyd_recorder *r;
	CHECK_EQ(pyd_recorder_new(&fake, &r), PYD_OK);
	const struct pyd_memsrc *src = pyd_recorder_memsrc(r);
	uint32_t x = 12345;
	uint8_t buf[64];
	for (int i = 0; i < 3000; i++) {
		x = x * 1103515245 + 12345;
		size_t off = (x >> 8) % (sizeof mem - 64), len = 1 + x % 40;
		mem[(x >> 4) % sizeof mem]++;
		CHECK_EQ(pyd_read(src, BASE + off, buf, len), PYD_OK);
		memset(seen + off, 1, len);
		memcpy(latest + off, buf, len);
	}
	CHECK_EQ(pyd_snapshot_write(r, &fake_rt, 0, tmp_path("random"), detail,
				    sizeof detail),
		 PYD_OK);
	pyd_recorder_free(r);
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(pyd_snapshot_open(tmp_path("random"), &s, detail,
				   sizeof detail),
		 PYD_OK);
	if (!s)
		return;
	src = pyd_snapshot_memsrc(s);
	/* Never listed while recording, so not in the file. */
	CHECK_EQ(src->mappings == NULL && src->threads == NULL, 1);
	size_t bad = 0, runs = 0;
	for (size_t i = 0; i < sizeof mem; i++) {
		uint8_t v;
		enum pyd_err err = src->read(src->ctx, BASE + i, &v, 1);
		bad += seen[i] ? err || v != latest[i] : err != PYD_E_READ;
		runs += seen[i] && (i == 0 || !seen[i - 1]);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(pyd_snapshot_pid(s), 0);
	pyd_snapshot_close(s);
	size_t len;
	uint8_t *b = load(tmp_path("random"), &len);
	CHECK_EQ(get64(b + find_section(b, len, MEMORY) + 16), runs);
	free(b);
}

/* Adjacent reads walking down (as frame chains do) and up: one run each,
 * with every byte where it belongs. */
static void walks(void)
{
	struct pyd_recorder *r;
	CHECK_EQ(pyd_recorder_new(&fake, &r), PYD_OK);
	const struct pyd_memsrc *src = pyd_recorder_memsrc(r);
	uint8_t buf[24];
	for (uint64_t off = 0x7e8; off >= 0x200; off -= 24)
		CHECK_EQ(pyd_read(src, BASE + off, buf, 24), PYD_OK);
	for (uint64_t off = 0x900; off < 0xf00; off += 12)
		CHECK_EQ(pyd_read(src, BASE + off, buf, 12), PYD_OK);
	CHECK_EQ(pyd_snapshot_write(r, &fake_rt, 0, tmp_path("walks"), detail,
				    sizeof detail),
		 PYD_OK);
	pyd_recorder_free(r);
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(pyd_snapshot_open(tmp_path("walks"), &s, detail,
				   sizeof detail),
		 PYD_OK);
	if (!s)
		return;
	src = pyd_snapshot_memsrc(s);
	CHECK_EQ(read_ok(src, 0x1f8, 8), false);
	CHECK_EQ(read_ok(src, 0x800, 1), false);
	for (uint64_t off = 0x200; off < 0x800; off += 128)
		CHECK_EQ(read_ok(src, off, 128), true);
	CHECK_EQ(read_ok(src, 0x900, 200), true);
	CHECK_EQ(read_ok(src, 0xf00 - 200, 200), true);
	CHECK_EQ(read_ok(src, 0xf00, 1), false);
	pyd_snapshot_close(s);
	size_t len;
	uint8_t *b = load(tmp_path("walks"), &len);
	CHECK_EQ(get64(b + find_section(b, len, MEMORY) + 16), 2);
	free(b);
}

/* A source that lists nothing: the snapshot says so, and a long binary
 * path and an empty recording survive. */
static void bare_source(void)
{
	const struct pyd_memsrc bare = {.read = fake_read};
	struct pyd_runtime rt = {.version = ""};
	memset(rt.binary, 'b', sizeof rt.binary - 1);
	struct pyd_recorder *r;
	CHECK_EQ(pyd_recorder_new(&bare, &r), PYD_OK);
	const struct pyd_memsrc *src = pyd_recorder_memsrc(r);
	CHECK_EQ(src->mappings == NULL && src->threads == NULL &&
			 src->symbol == NULL && src->open_file == NULL,
		 1);
	CHECK_EQ(pyd_snapshot_write(r, &rt, 0, tmp_path("bare"), detail,
				    sizeof detail),
		 PYD_OK);
	pyd_recorder_free(r);
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(pyd_snapshot_open(tmp_path("bare"), &s, detail, sizeof detail),
		 PYD_OK);
	if (!s)
		return;
	src = pyd_snapshot_memsrc(s);
	CHECK_EQ(src->mappings == NULL && src->threads == NULL, 1);
	CHECK_EQ(strlen(pyd_snapshot_runtime(s)->binary), sizeof rt.binary - 1);
	CHECK_STR(pyd_snapshot_meta(s)->source_kind, "unknown");
	uint8_t v;
	CHECK_EQ(src->read(src->ctx, BASE, &v, 1), PYD_E_READ);
	pyd_snapshot_close(s);
}

static void write_errors(void)
{
	struct pyd_recorder *r;
	CHECK_EQ(pyd_recorder_new(&fake, &r), PYD_OK);
	CHECK_EQ(pyd_snapshot_write(r, &fake_rt, 1, "/nonexistent/dir/snap",
				    detail, sizeof detail),
		 PYD_E_WRITE);
	CHECK_HAS(detail, "No such file or directory");
	/* Over an existing file, atomically, leaving no temporary file. */
	int before = count_files();
	save(tmp_path("old"), (const uint8_t *)"old", 3);
	CHECK_EQ(pyd_snapshot_write(r, &fake_rt, 1, tmp_path("old"), detail,
				    sizeof detail),
		 PYD_OK);
	CHECK_EQ(count_files(), before + 1);
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(pyd_snapshot_open(tmp_path("old"), &s, detail, sizeof detail),
		 PYD_OK);
	pyd_snapshot_close(s);
	/* A write that fails half-way (file size limit, like a full disk)
	 * leaves neither a temporary file nor a damaged old one. */
	uint8_t buf[512];
	pyd_read(pyd_recorder_memsrc(r), BASE, buf, sizeof buf);
	struct rlimit old, small;
	getrlimit(RLIMIT_FSIZE, &old);
	small = (struct rlimit){64, old.rlim_max};
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &small);
	CHECK_EQ(pyd_snapshot_write(r, &fake_rt, 1, tmp_path("old"), detail,
				    sizeof detail),
		 PYD_E_WRITE);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK_HAS(detail, "File too large");
	CHECK_EQ(count_files(), before + 1);
	CHECK_EQ(pyd_snapshot_open(tmp_path("old"), &s, detail, sizeof detail),
		 PYD_OK);
	pyd_snapshot_close(s);
	pyd_recorder_free(r);
}

/* ---- Hostile files ---- */

static void truncated(const uint8_t *good, size_t len)
{
	for (size_t n = 0; n < len; n++)
		rejected(good, n);
	char want[128];
	snprintf(want, sizeof want,
		 "snapshot truncated at byte 100 (expected %zu)", len);
	CHECK_STR(rejected(good, 100), want);
	CHECK_HAS(rejected(good, 12), "truncated at byte 12");
	CHECK_HAS(rejected(good, 0), "not a pystack-dump snapshot");
}

static void flipped(const uint8_t *good, size_t len)
{
	uint8_t *b = malloc(len);
	for (size_t i = 0; i < len; i++) {
		static const uint8_t masks[] = {0x01, 0x80, 0xff};
		for (int k = 0; k < 3; k++) {
			memcpy(b, good, len);
			b[i] ^= masks[k];
			rejected(b, len);
		}
	}
	memcpy(b, good, len);
	b[0] = 'X';
	CHECK_HAS(rejected(b, len), "bad magic");
	free(b);
}

static void versions(const uint8_t *good, size_t len)
{
	uint8_t *b = malloc(len);
	memcpy(b, good, len);
	set32(b + 8, 3);
	CHECK_HAS(rejected(b, len), "header checksum mismatch");
	fix_header(b, len);
	CHECK_STR(rejected(b, len),
		  "snapshot format version 3 is newer than this pystack-dump "
		  "reads (1); upgrade pystack-dump");
	set32(b + 8, 0);
	fix_header(b, len);
	CHECK_HAS(rejected(b, len), "version 0");
	/* A longer header from a newer minor revision is fine... */
	memcpy(b, good, len);
	free(b);
	b = calloc(1, len + 8);
	memcpy(b, good, 32);
	memcpy(b + 40, good + 32, len - 32);
	set32(b + 12, 40);
	fix_header(b, len + 8);
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(open_bytes(b, len + 8, &s), PYD_OK);
	pyd_snapshot_close(s);
	/* ...an absurd one is not (checked before the CRC it bounds). */
	set32(b + 12, 0x7fffffff);
	CHECK_HAS(rejected(b, len + 8), "header size");
	free(b);
}

static void huge_lengths(const uint8_t *good, size_t len)
{
	uint8_t *b = malloc(len);
	static const uint64_t lens[] = {UINT64_MAX, 1ull << 63, 1ull << 32};
	size_t mo = find_section(good, len, MEMORY);
	for (size_t i = 0; i < 3; i++) {
		memcpy(b, good, len);
		set64(b + mo + 8, lens[i]);
		CHECK_HAS(rejected(b, len), "runs past the end");
	}
	memcpy(b, good, len);
	set64(b + mo + 8, len - mo - 19); /* one byte too many */
	CHECK_HAS(rejected(b, len), "runs past the end");
	free(b);
}

/* Change a payload with the checksum made right again: the parser itself
 * must catch it. */
static const char *forged(const uint8_t *good, size_t len, uint32_t type,
			  size_t at, int width, uint64_t v)
{
	uint8_t *b = malloc(len);
	memcpy(b, good, len);
	size_t off = find_section(b, len, type);
	uint8_t *p = b + off + 16 + at;
	if (width == 1)
		*p = (uint8_t)v;
	else if (width == 4)
		set32(p, (uint32_t)v);
	else
		set64(p, v);
	fix_section(b, len, off);
	static char why[512];
	snprintf(why, sizeof why, "%s", rejected(b, len));
	free(b);
	return why;
}

static void forged_payloads(const uint8_t *good, size_t len)
{
	CHECK_HAS(forged(good, len, MAPPINGS, 0, 4, UINT32_MAX), "count");
	CHECK_HAS(forged(good, len, THREADS, 0, 4, 4), "ends early");
	CHECK_HAS(forged(good, len, THREADS, 0, 4, 1u << 30), "count");
	CHECK_HAS(forged(good, len, MEMORY, 0, 8, UINT64_MAX), "count");
	CHECK_HAS(forged(good, len, MEMORY, 0, 8, 1ull << 40), "count");
	/* the first range: addr at 8, len at 16 */
	CHECK_HAS(forged(good, len, MEMORY, 16, 8, 1ull << 40), "ends early");
	CHECK_HAS(forged(good, len, MEMORY, 16, 8, 0), "empty");
	CHECK_HAS(forged(good, len, MEMORY, 8, 8, UINT64_MAX - 4), "wraps");
	/* debug_build (u8), then code_type_addr and asyncio_debug_addr (u64
	 * each) end the RUNTIME payload */
	size_t ro = find_section(good, len, RUNTIME);
	CHECK_HAS(forged(good, len, RUNTIME, get64(good + ro + 8) - 17, 1, 2),
		  "debug_build");
	CHECK_HAS(forged(good, len, MEMORY, 8, 8, BASE + 0x100), "sorted");
	/* META: created(8) pid(4) then the tool string's length */
	CHECK_HAS(forged(good, len, META, 12, 4, UINT32_MAX), "longer");
	CHECK_HAS(forged(good, len, META, 12, 4, 200), "ends early");
	CHECK_HAS(forged(good, len, META, 12, 4, 0), "missing");
	CHECK_HAS(forged(good, len, META, 12, 4, 5), "NUL");
	CHECK_HAS(forged(good, len, META, 16, 1, 0), "NUL");
	/* the architecture, last: the host's ("x86_64", "aarch64") */
	size_t mo = find_section(good, len, META);
	size_t an = strlen(pyd_arch_host()->name) + 1;
	CHECK_HAS(forged(good, len, META, get64(good + mo + 8) - an, 1, 'X'),
		  "target; this pystack-dump reads x86-64 and arm64 only");
	/* RUNTIME: the binary string runs to the end of the section */
	CHECK_HAS(forged(good, len, RUNTIME, 0, 4, 4096 + 1), "longer");
	CHECK_HAS(forged(good, len, RUNTIME, 0, 4, 4096), "ends early");
	/* MAPPINGS: the first mapping's end before its start */
	CHECK_HAS(forged(good, len, MAPPINGS, 12, 8, 0), "ends before");
}

/* good with bytes [at, at + cut) replaced by one section, made valid. */
static uint8_t *splice(const uint8_t *good, size_t len, size_t at, size_t cut,
		       uint32_t type, uint32_t flags, const void *payload,
		       size_t n, size_t *outlen)
{
	*outlen = len - cut + 20 + n;
	uint8_t *b = malloc(*outlen);
	memcpy(b, good, at);
	set32(b + at, type);
	set32(b + at + 4, flags);
	set64(b + at + 8, n);
	memcpy(b + at + 16, payload, n);
	memcpy(b + at + 20 + n, good + at + cut, len - at - cut);
	fix_section(b, *outlen, at);
	fix_header(b, *outlen);
	return b;
}

static void sections(const uint8_t *good, size_t len)
{
	size_t n;
	struct pyd_snapshot *s = NULL;
	uint8_t *b = splice(good, len, len, 0, 99, 0, "abc", 3, &n);
	CHECK_EQ(open_bytes(b, n, &s), PYD_OK); /* unknown: skipped */
	pyd_snapshot_close(s);
	free(b);
	b = splice(good, len, len, 0, 99, 1, "abc", 3, &n);
	CHECK_HAS(rejected(b, n), "section type 99, which this pystack-dump "
				  "does not know; upgrade");
	free(b);
	size_t ro = find_section(good, len, RUNTIME);
	b = splice(good, len, len, 0, RUNTIME, 0, good + ro + 16,
		   (size_t)get64(good + ro + 8), &n);
	CHECK_HAS(rejected(b, n), "a second RUNTIME section");
	free(b);
	/* Bytes after the known fields: room for a newer writer's fields. */
	uint8_t meta[128] = {0};
	size_t mo = find_section(good, len, META);
	size_t ml = (size_t)get64(good + mo + 8);
	memcpy(meta, good + mo + 16, ml);
	b = splice(good, len, mo, 20 + ml, META, 0, meta, ml + 4, &n);
	CHECK_EQ(open_bytes(b, n, &s), PYD_OK);
	pyd_snapshot_close(s);
	free(b);
	/* MEMORY is the last section: drop it. */
	size_t memo = find_section(good, len, MEMORY);
	b = malloc(len);
	memcpy(b, good, len);
	fix_header(b, memo);
	CHECK_HAS(rejected(b, memo), "no MEMORY section");
	free(b);
	b = malloc(len + 5);
	memcpy(b, good, len);
	memcpy(b + len, "extra", 5);
	CHECK_HAS(rejected(b, len + 5), "5 unexpected bytes");
	fix_header(b, len + 5);
	CHECK_HAS(rejected(b, len + 5), "runs past the end");
	free(b);
}

static void not_files(void)
{
	struct pyd_snapshot *s = NULL;
	CHECK_EQ(pyd_snapshot_open(tmp_path("missing"), &s, detail,
				   sizeof detail),
		 PYD_E_SNAPSHOT);
	CHECK_HAS(detail, "No such file or directory");
	CHECK_EQ(pyd_snapshot_open(dir, &s, detail, sizeof detail),
		 PYD_E_SNAPSHOT);
	CHECK_HAS(detail, "not a regular file");
	CHECK_EQ(pyd_snapshot_open(dir, &s, NULL, 0), PYD_E_SNAPSHOT);
}

/* Use everything an accepted file offers, for ASan to watch. */
static void exercise(const struct pyd_memsrc *src)
{
	const struct pyd_mapping *m;
	const struct pyd_os_thread *t;
	size_t n;
	uint8_t buf[64];
	if (src->mappings && src->mappings(src->ctx, &m, &n) == PYD_OK)
		for (size_t i = 0; i < n; i++)
			CHECK_EQ(m[i].path ? strlen(m[i].path) < 65536 : 1, 1);
	if (src->threads && src->threads(src->ctx, &t, &n) == PYD_OK)
		for (size_t i = 0; i < n; i++)
			CHECK_EQ(strlen(t[i].name) < 32, 1);
	for (uint64_t a = BASE; a < BASE + 0x600; a += 8)
		src->read(src->ctx, a, buf, sizeof buf);
}

/* Random bytes changed with every checksum made right again: accepted or
 * refused, never a crash (the point of running this under ASan). */
static void fuzz(const uint8_t *good, size_t len)
{
	size_t offs[8], noffs = 0;
	for (size_t off = 32; off + 20 <= len && noffs < 8;
	     off += 20 + get64(good + off + 8))
		offs[noffs++] = off;
	uint8_t *b = malloc(len);
	uint32_t x = 777;
	int accepted = 0;
	for (int i = 0; i < 4000; i++) {
		memcpy(b, good, len);
		for (int k = 0; k <= i % 4; k++) {
			x = x * 1103515245 + 12345;
			size_t at = 32 + (x >> 8) % (len - 32);
			b[at] = (uint8_t)(x >> 24 & 1 ? x >> 16 : 0xff);
		}
		for (size_t k = 0; k < noffs; k++)
			fix_section(b, len, offs[k]);
		struct pyd_snapshot *s = NULL;
		enum pyd_err err = open_bytes(b, len, &s);
		CHECK_EQ(err == PYD_OK || err == PYD_E_SNAPSHOT, 1);
		if (s) {
			accepted++;
			exercise(pyd_snapshot_memsrc(s));
			pyd_snapshot_close(s);
		}
	}
	printf("fuzz: %d of 4000 forged files accepted\n", accepted);
	free(b);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/pyd-snap-XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	round_trip(tmp_path("good"));
	random_reads();
	walks();
	bare_source();
	write_errors();
	not_files();
	size_t len;
	uint8_t *good = load(tmp_path("good"), &len);
	CHECK_EQ(len > 100, 1);
	truncated(good, len);
	flipped(good, len);
	versions(good, len);
	huge_lengths(good, len);
	forged_payloads(good, len);
	sections(good, len);
	fuzz(good, len);
	free(good);
	remove_dir();
	return check_done("test_snapshot");
}
