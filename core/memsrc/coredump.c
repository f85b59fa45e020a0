/*
 * ELF core-file memory source.
 */
#define _GNU_SOURCE
#include "coredump.h"
#include "decompress.h"
#include "../grow.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds on what a core may claim; past them it is garbage. */
#define MAX_SEGMENTS (1u << 20)
#define MAX_FILE_ENTRIES (1u << 20)
#define MAX_THREADS 65536
#define MAX_OPEN_FILES 64
#define WARNINGS_SIZE 4096
#define BUILD_ID_MAX 64
/* Bounds on the dynamic linker's lists read back from memory. */
#define MAX_DYNAMIC 512
#define MAX_LINK_MAPS 1024

/* struct elf_prstatus / elf_prpsinfo on 64-bit Linux (x86-64, arm64) */
#define PRSTATUS_PID 32
#define PRSTATUS_REG 112
#define PRPSINFO_PID 24

struct segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};

struct backing_file {
	char *path; /* mapping path as the core names it */
	int fd;     /* -1: looked for and not found */
};

/* Each thread's user registers, from its NT_PRSTATUS (arch.h). */
struct thread_regs {
	uint64_t r[PYD_MAX_USER_WORDS];
	bool valid;
};

struct pyd_core {
	struct pyd_memsrc src;
	struct thread_regs *regs; /* one per thread */
	int fd;
	uint64_t file_size;
	Elf *elf;
	struct pyd_core_opts opts;
	struct segment *segs;
	size_t nsegs;
	struct pyd_mapping *maps;
	size_t nmaps;
	struct pyd_os_thread *threads;
	size_t nthreads;
	int pid;
	const char *exe_path; /* the executable's path in NT_FILE */
	uint64_t auxv[64];    /* NT_AUXV's (type, value) pairs */
	size_t nauxv;
	const char *other_root; /* pyd_core_other_root */
	const char *compressed; /* the format it was read from, "" if none */
	struct backing_file files[MAX_OPEN_FILES];
	size_t nfiles;
	char warnings[WARNINGS_SIZE];
};

static void warn(struct pyd_core *c, const char *fmt, const char *a,
		 const char *b, const char *d)
{
	size_t used = strlen(c->warnings);
	snprintf(c->warnings + used, sizeof c->warnings - used, fmt, a, b, d);
}

static const struct segment *find_segment(const struct pyd_core *c,
					  uint64_t addr)
{
	size_t lo = 0, hi = c->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct segment *s = &c->segs[mid];
		if (addr < s->vaddr)
			hi = mid;
		else if (addr - s->vaddr >= s->memsz)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

static const struct pyd_mapping *find_mapping(const struct pyd_core *c,
					      uint64_t addr)
{
	for (size_t i = 0; i < c->nmaps; i++)
		if (addr >= c->maps[i].start && addr < c->maps[i].end)
			return &c->maps[i];
	return NULL;
}

static int open_candidate(const struct pyd_core *c, const char *path,
			  char *used, size_t usedsz)
{
	if (c->opts.exe && c->exe_path && strcmp(path, c->exe_path) == 0)
		return pyd_open_under(NULL, c->opts.exe, used, usedsz);
	return pyd_open_under(c->opts.sysroot, path, used, usedsz);
}

static int core_open_file(void *ctx, const struct pyd_mapping *m, char *used,
			  size_t usedsz)
{
	return m->path ? open_candidate(ctx, m->path, used, usedsz) : -1;
}

/* The backing file of a mapping, opened once. */
static int backing_fd(struct pyd_core *c, const char *path)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].path, path) == 0)
			return c->files[i].fd;
	int fd = open_candidate(c, path, NULL, 0);
	if (c->nfiles < MAX_OPEN_FILES) {
		c->files[c->nfiles].path = strdup(path);
		c->files[c->nfiles++].fd = fd;
	}
	return fd;
}

/* Bytes the core left out: a file-backed mapping's file has them. */
static enum pyd_err read_backing(struct pyd_core *c, uint64_t addr, void *buf,
				 size_t len)
{
	const struct pyd_mapping *m = find_mapping(c, addr);
	if (!m || !m->path || len > m->end - addr)
		return PYD_E_READ;
	int fd = backing_fd(c, m->path);
	if (fd < 0)
		return PYD_E_READ;
	ssize_t n = pread(fd, buf, len, (off_t)(m->offset + (addr - m->start)));
	return n == (ssize_t)len ? PYD_OK : PYD_E_READ;
}

static enum pyd_err core_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyd_core *c = ctx;
	uint8_t *out = buf;
	while (len) {
		const struct segment *s = find_segment(c, addr);
		if (!s)
			return read_backing(c, addr, out, len);
		uint64_t in = addr - s->vaddr;
		size_t n = len < s->memsz - in ? len : (size_t)(s->memsz - in);
		enum pyd_err err;
		if (in < s->filesz) {
			if (n > s->filesz - in)
				n = (size_t)(s->filesz - in);
			uint64_t off = s->offset + in;
			ssize_t got = off + n <= c->file_size
					      ? pread(c->fd, out, n, (off_t)off)
					      : -1;
			err = got == (ssize_t)n ? PYD_OK : PYD_E_READ;
		} else {
			err = read_backing(c, addr, out, n);
		}
		if (err)
			return err;
		out += n;
		addr += n;
		len -= n;
	}
	return PYD_OK;
}

static enum pyd_err core_mappings(void *ctx, const struct pyd_mapping **maps,
				  size_t *n)
{
	struct pyd_core *c = ctx;
	*maps = c->maps;
	*n = c->nmaps;
	return PYD_OK;
}

static enum pyd_err core_threads(void *ctx, const struct pyd_os_thread **t,
				 size_t *n)
{
	struct pyd_core *c = ctx;
	*t = c->threads;
	*n = c->nthreads;
	return PYD_OK;
}

static enum pyd_err core_regs(void *ctx, int64_t tid, uint64_t *regs)
{
	struct pyd_core *c = ctx;
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].tid == tid && c->regs[i].valid) {
			memcpy(regs, c->regs[i].r, sizeof c->regs[i].r);
			return PYD_OK;
		}
	return PYD_E_READ;
}

/* NT_FILE: count, page size, count x (start, end, page offset), names. */
static void parse_nt_file(struct pyd_core *c, const uint8_t *d, size_t len)
{
	if (len < 16 || c->maps)
		return;
	uint64_t count = pyd_u64_at(d, 0), page = pyd_u64_at(d, 8);
	if (count > MAX_FILE_ENTRIES || count * 24 > len - 16)
		return;
	c->maps = calloc(count ? count : 1, sizeof *c->maps);
	if (!c->maps)
		return;
	const char *name = (const char *)d + 16 + count * 24;
	const char *end = (const char *)d + len;
	for (uint64_t i = 0; i < count && name < end; i++) {
		const uint8_t *e = d + 16 + i * 24;
		size_t nlen = strnlen(name, (size_t)(end - name));
		struct pyd_mapping *m = &c->maps[c->nmaps++];
		m->start = pyd_u64_at(e, 0);
		m->end = pyd_u64_at(e, 8);
		m->offset = pyd_u64_at(e, 16) * page;
		m->path = strndup(name, nlen);
		name += nlen + 1;
	}
}

static void add_thread(struct pyd_core *c, const uint8_t *d, size_t len)
{
	if (len < PRSTATUS_PID + 4 || c->nthreads >= MAX_THREADS)
		return;
	if (!pyd_grow_one((void **)&c->threads, c->nthreads,
			  sizeof *c->threads) ||
	    !pyd_grow_one((void **)&c->regs, c->nthreads, sizeof *c->regs))
		return;
	int32_t tid;
	memcpy(&tid, d + PRSTATUS_PID, sizeof tid);
	struct thread_regs *tr = &c->regs[c->nthreads];
	size_t size = c->src.arch->user_words * sizeof *tr->r;
	tr->valid = len >= PRSTATUS_REG + size;
	if (tr->valid)
		memcpy(tr->r, d + PRSTATUS_REG, size);
	c->threads[c->nthreads++] = (struct pyd_os_thread){
		.tid = tid,
		.run = PYD_RUN_UNKNOWN,
	};
}

static void parse_notes(struct pyd_core *c, const GElf_Phdr *ph)
{
	if (ph->p_offset + ph->p_filesz > c->file_size)
		return;
	Elf_Data *d = elf_getdata_rawchunk(c->elf, (int64_t)ph->p_offset,
					   ph->p_filesz, ELF_T_NHDR);
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;
	while (d && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
		const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;
		if (nh.n_type == NT_PRSTATUS)
			add_thread(c, desc, nh.n_descsz);
		else if (nh.n_type == NT_FILE)
			parse_nt_file(c, desc, nh.n_descsz);
		else if (nh.n_type == NT_AUXV && !c->nauxv) {
			c->nauxv = nh.n_descsz / 16 < 32 ? nh.n_descsz / 16 : 32;
			memcpy(c->auxv, desc, c->nauxv * 16);
		} else if (nh.n_type == NT_PRPSINFO && nh.n_descsz >= PRPSINFO_PID + 4)
			memcpy(&c->pid, desc + PRPSINFO_PID, sizeof c->pid);
		off = next;
	}
}

static enum pyd_err load_program_headers(struct pyd_core *c)
{
	size_t phnum;
	if (elf_getphdrnum(c->elf, &phnum) != 0 || phnum > MAX_SEGMENTS)
		return PYD_E_NOTCORE;
	c->segs = calloc(phnum ? phnum : 1, sizeof *c->segs);
	if (!c->segs)
		return PYD_E_NOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(c->elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_NOTE)
			parse_notes(c, &ph);
		else if (ph.p_type == PT_LOAD && ph.p_memsz)
			c->segs[c->nsegs++] = (struct segment){
				ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
				ph.p_flags};
	}
	return PYD_OK;
}

/* ---- Mappings of a core without NT_FILE (qemu-user's) ----
 * The executable is where NT_AUXV says (its path at AT_EXECFN, placed by
 * AT_ENTRY), the libraries where the dynamic linker's list in memory
 * says (r_debug from the executable's DT_DEBUG), as gdb finds them. */

static uint64_t auxv_value(const struct pyd_core *c, uint64_t type)
{
	for (size_t i = 0; i < c->nauxv; i++)
		if (c->auxv[2 * i] == type)
			return c->auxv[2 * i + 1];
	return 0;
}

static char *core_string(struct pyd_core *c, uint64_t addr)
{
	char buf[4096];
	size_t n = 0;
	while (n < sizeof buf - 1 && core_read(c, addr + n, buf + n, 1) == PYD_OK &&
	       buf[n])
		n++;
	buf[n] = 0;
	return n && n < sizeof buf - 1 ? strdup(buf) : NULL;
}

/* Map path's PT_LOAD segments at bias; its PT_DYNAMIC's address, or 0. */
static uint64_t map_file(struct pyd_core *c, char *path, uint64_t entry,
			 uint64_t bias)
{
	uint64_t dynamic = 0;
	int fd = open_candidate(c, path, NULL, 0);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	GElf_Ehdr eh;
	size_t phnum;
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) ||
	    phnum > 256)
		goto out;
	if (entry)
		bias = entry - eh.e_entry;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_DYNAMIC)
			dynamic = ph.p_vaddr + bias;
		if (ph.p_type != PT_LOAD || !ph.p_memsz ||
		    !pyd_grow_one((void **)&c->maps, c->nmaps, sizeof *c->maps))
			continue;
		uint64_t align = ph.p_vaddr - ph.p_vaddr / 4096 * 4096;
		c->maps[c->nmaps++] = (struct pyd_mapping){
			.start = ph.p_vaddr + bias - align,
			.end = (ph.p_vaddr + bias + ph.p_memsz + 4095) / 4096 * 4096,
			.offset = ph.p_offset - align,
			.path = strdup(path),
		};
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(path);
	return dynamic;
}

/* r_debug.r_map from the executable's DT_DEBUG (the dynamic linker
 * fills it in at start); 0 if not found. */
static uint64_t link_map_head(struct pyd_core *c, uint64_t dynamic)
{
	uint64_t d[2], r_map = 0;
	for (int i = 0; dynamic && i < MAX_DYNAMIC; i++) {
		if (core_read(c, dynamic + 16 * (uint64_t)i, d, sizeof d) ||
		    d[0] == DT_NULL)
			return 0;
		if (d[0] == DT_DEBUG)
			return d[1] && !core_read(c, d[1] + 8, &r_map, 8) ? r_map : 0;
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct pyd_mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void maps_from_memory(struct pyd_core *c)
{
	char *exe = core_string(c, auxv_value(c, AT_EXECFN));
	uint64_t entry = auxv_value(c, AT_ENTRY);
	if (!exe || !entry) {
		free(exe);
		return;
	}
	c->exe_path = exe; /* so that --exe stands for it */
	uint64_t lm = link_map_head(c, map_file(c, strdup(exe), entry, 0));
	c->exe_path = c->nmaps ? c->maps[0].path : NULL;
	free(exe);
	/* struct link_map: l_addr, l_name, l_ld, l_next */
	for (int i = 0; lm && i < MAX_LINK_MAPS; i++) {
		uint64_t l[4];
		if (core_read(c, lm, l, sizeof l))
			break;
		char *name = core_string(c, l[1]);
		if (name)
			map_file(c, name, 0, l[0]);
		lm = l[3];
	}
	qsort(c->maps, c->nmaps, sizeof *c->maps, by_start);
}

/* Neither NT_FILE nor the executable says which memory was which file
 * (a qemu core read with its binaries elsewhere): every segment with
 * contents is listed as memory of no file, so that 3.13+'s runtime can
 * still be found by its cookie among the writable ones. */
static void maps_from_segments(struct pyd_core *c)
{
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct segment *s = &c->segs[i];
		if (!s->filesz ||
		    !pyd_grow_one((void **)&c->maps, c->nmaps, sizeof *c->maps))
			continue;
		c->maps[c->nmaps++] = (struct pyd_mapping){
		    .start = s->vaddr, .end = s->vaddr + s->memsz};
	}
}

static void set_perms(struct pyd_core *c)
{
	for (size_t i = 0; i < c->nmaps; i++) {
		struct pyd_mapping *m = &c->maps[i];
		const struct segment *s = find_segment(c, m->start);
		uint32_t f = s ? s->flags : PF_R;
		snprintf(m->perms, sizeof m->perms, "%c%c%cp", f & PF_R ? 'r' : '-',
			 f & PF_W ? 'w' : '-', f & PF_X ? 'x' : '-');
		if (!c->exe_path && m->offset == 0)
			c->exe_path = m->path;
	}
}

/* NT_GNU_BUILD_ID from an ELF image's PT_NOTE segments. */
static size_t build_id(Elf *elf, uint8_t *id)
{
	size_t phnum;
	if (!elf || elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum && i < 256; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
						   ph.p_filesz, ELF_T_NHDR);
		GElf_Nhdr nh;
		size_t off = 0, next, name_off, desc_off;
		while (d && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 &&
			    nh.n_descsz <= BUILD_ID_MAX) {
				memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
				return nh.n_descsz;
			}
			off = next;
		}
	}
	return 0;
}

/* The build-id a mapped file had, from its first page in the core. */
static size_t build_id_in_core(struct pyd_core *c, const struct pyd_mapping *m,
			       uint8_t *id)
{
	static char page[4096];
	if (core_read(c, m->start, page, sizeof page))
		return 0;
	Elf *elf = elf_memory(page, sizeof page);
	size_t n = build_id(elf, id);
	if (elf)
		elf_end(elf);
	return n;
}

static size_t build_id_of_file(int fd, uint8_t *id)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = build_id(elf, id);
	if (elf)
		elf_end(elf);
	return n;
}

static void hex(const uint8_t *id, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = 0;
}

/*
 * Compare each mapped ELF on disk with the build-id the core recorded.
 * A mismatched library only warrants a warning (the decode may still
 * work); a mismatched --exe is the user's mistake, so it is an error.
 */
static enum pyd_err check_build_ids(struct pyd_core *c, char *detail,
				    size_t detailsz)
{
	for (size_t i = 0; i < c->nmaps; i++) {
		const struct pyd_mapping *m = &c->maps[i];
		uint8_t want[BUILD_ID_MAX], have[BUILD_ID_MAX];
		char used[4096], w[2 * BUILD_ID_MAX + 1], h[2 * BUILD_ID_MAX + 1];
		size_t nw, nh;
		if (m->offset != 0 || !m->path || !(nw = build_id_in_core(c, m, want)))
			continue;
		int fd = open_candidate(c, m->path, used, sizeof used);
		nh = fd >= 0 ? build_id_of_file(fd, have) : 0;
		if (fd >= 0)
			close(fd);
		bool same = nh == nw && memcmp(want, have, nw) == 0;
		/* A file with no build-id of its own tells nothing. */
		if (!same && (fd < 0 || nh) && !c->opts.sysroot &&
		    !c->other_root)
			c->other_root = m->path;
		if (!nh || same)
			continue;
		hex(want, nw, w);
		hex(have, nh, h);
		if (c->opts.exe && m->path == c->exe_path) {
			snprintf(detail, detailsz,
				 "--exe %s has build-id %s, but the core's "
				 "executable %s had build-id %s",
				 used, h, m->path, w);
			return PYD_E_EXEMISMATCH;
		}
		warn(c, "warning: %s has build-id %s, the core recorded %s\n",
		     used, h, w);
	}
	return PYD_OK;
}

static enum pyd_err check_header(struct pyd_core *c, char *detail,
				 size_t detailsz)
{
	GElf_Ehdr eh;
	if (!c->elf || elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh)) {
		snprintf(detail, detailsz, "not an ELF file");
		return PYD_E_NOTCORE;
	}
	if (eh.e_type != ET_CORE) {
		snprintf(detail, detailsz,
			 "an ELF file, but not a core dump (e_type %u)",
			 (unsigned)eh.e_type);
		return PYD_E_NOTCORE;
	}
	c->src.arch = pyd_arch_by_machine(eh.e_machine);
	if (!c->src.arch || gelf_getclass(c->elf) != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB) {
		snprintf(detail, detailsz,
			 "a core of another architecture (ELF machine %u); "
			 "pystack-dump reads %s cores",
			 (unsigned)eh.e_machine, pyd_arch_labels());
		return PYD_E_FOREIGN;
	}
	return PYD_OK;
}

enum pyd_err pyd_core_open(const char *path, const struct pyd_core_opts *o,
			   struct pyd_core **out, char *detail, size_t detailsz)
{
	struct stat st;
	*out = NULL;
	detail[0] = 0;
	int fd = pyd_open_regular(path);
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(detail, detailsz, "%s",
		         errno == EINVAL ? "not a regular file (a FIFO, a "
		                           "device or a socket)"
		                         : strerror(errno));
		if (fd >= 0)
			close(fd);
		return PYD_E_NOTCORE;
	}
	/* systemd-coredump's (zstd, lz4, xz), or one gzipped to move it */
	const char *packed;
	enum pyd_err derr = pyd_decompress_fd(&fd, &packed, detail, detailsz);
	if (derr || fstat(fd, &st) != 0) {
		close(fd);
		return derr ? derr : PYD_E_NOTCORE;
	}
	struct pyd_core *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return PYD_E_NOMEM;
	}
	elf_version(EV_CURRENT);
	c->fd = fd;
	c->file_size = (uint64_t)st.st_size;
	c->compressed = packed;
	c->opts = *o;
	c->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	c->src = (struct pyd_memsrc){
		.ctx = c,
		.read = core_read,
		.mappings = core_mappings,
		.threads = core_threads,
		.open_file = core_open_file,
		.regs = core_regs,
	};
	enum pyd_err err = check_header(c, detail, detailsz);
	if (!err)
		err = load_program_headers(c);
	if (!err) {
		if (!c->maps)
			maps_from_memory(c);
		if (!c->maps)
			maps_from_segments(c);
		set_perms(c);
		err = check_build_ids(c, detail, detailsz);
	}
	if (err) {
		pyd_core_close(c);
		return err;
	}
	*out = c;
	return PYD_OK;
}

const struct pyd_memsrc *pyd_core_memsrc(struct pyd_core *c)
{
	return &c->src;
}

const char *pyd_core_compression(const struct pyd_core *c)
{
	return c->compressed ? c->compressed : "";
}

int pyd_core_pid(const struct pyd_core *c)
{
	return c->pid;
}

uint64_t pyd_core_missing_bytes(const struct pyd_core *c)
{
	uint64_t need = 0;
	for (size_t i = 0; i < c->nsegs; i++) {
		uint64_t end = c->segs[i].offset + c->segs[i].filesz;
		if (c->segs[i].filesz && end > need)
			need = end;
	}
	return need > c->file_size ? need - c->file_size : 0;
}

const char *pyd_core_other_root(const struct pyd_core *c)
{
	return c->other_root;
}

const char *pyd_core_warnings(const struct pyd_core *c)
{
	return c->warnings;
}

void pyd_core_close(struct pyd_core *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nmaps; i++)
		free(c->maps[i].path);
	for (size_t i = 0; i < c->nfiles; i++) {
		free(c->files[i].path);
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
	}
	free(c->maps);
	free(c->segs);
	free(c->threads);
	free(c->regs);
	if (c->elf)
		elf_end(c->elf);
	close(c->fd);
	free(c);
}
