/*
 * Finding the interpreter in an ELF process image with libelf.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

/* Files we never look into for a Python runtime. */
static bool skip_path(const char *path)
{
	return !path || path[0] != '/' || strncmp(path, "/dev/", 5) == 0 ||
	       strstr(path, "/ld-linux") || strstr(path, "/libc.so") ||
	       strstr(path, "/libm.so") || strstr(path, "/libpthread");
}

/* The symbols runtime discovery reads, by index into struct elf_syms. */
enum { SYM_RUNTIME, SYM_PY_VERSION, SYM_TSTATE_CURRENT, SYM_INTERP_HEAD,
       SYM_CODE_TYPE, SYM_NEGATIVE_REFCOUNT, SYM_COUNT };

static const char *const sym_names[SYM_COUNT] = {
	[SYM_RUNTIME] = "_PyRuntime",
	[SYM_PY_VERSION] = "Py_Version",
	[SYM_TSTATE_CURRENT] = "_PyThreadState_Current",
	[SYM_INTERP_HEAD] = "interp_head",
	[SYM_CODE_TYPE] = "PyCode_Type",
	/* only in a debug build */
	[SYM_NEGATIVE_REFCOUNT] = "_Py_NegativeRefcount",
};

struct elf_syms {
	uint64_t value[SYM_COUNT];
};

static void note_symbol(struct elf_syms *s, const char *name, uint64_t value)
{
	for (int i = 0; i < SYM_COUNT; i++)
		if (strcmp(name, sym_names[i]) == 0)
			s->value[i] = value;
}

static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			struct elf_syms *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || sh->sh_entsize == 0)
		return;
	size_t count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym) || sym.st_value == 0)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (name && name[0] && (name[0] == '_' || name[0] == 'P' ||
					name[0] == 'i'))
			note_symbol(s, name, sym.st_value);
	}
}

/* A .gnu.hash section as the dynamic loader reads it: a header, a Bloom
 * filter we do not need, buckets, then one chain word per hashed symbol. */
struct gnu_hash {
	const uint32_t *buckets, *chain;
	uint32_t nbuckets, symoffset;
	size_t nchain;
};

static bool gnu_hash_parse(Elf *elf, Elf_Data *d, struct gnu_hash *h)
{
	uint32_t hdr[4];
	if (!d || !d->d_buf || d->d_size < sizeof hdr)
		return false;
	memcpy(hdr, d->d_buf, sizeof hdr);
	size_t word = gelf_getclass(elf) == ELFCLASS64 ? 8 : 4;
	size_t buckets = sizeof hdr + (size_t)hdr[2] * word;
	if (hdr[0] == 0 || hdr[2] > d->d_size / word ||
	    buckets + (size_t)hdr[0] * 4 > d->d_size)
		return false;
	h->nbuckets = hdr[0];
	h->symoffset = hdr[1];
	h->buckets = (const uint32_t *)((const char *)d->d_buf + buckets);
	h->chain = h->buckets + hdr[0];
	h->nchain = (d->d_size - buckets) / 4 - hdr[0];
	return true;
}

/* The value of the defined symbol called name, as ld.so finds it: its
 * hash's bucket starts a run of chain words, the last with bit 0 set. */
static uint64_t gnu_hash_lookup(Elf *elf, const struct gnu_hash *h,
				Elf_Data *syms, size_t strndx, const char *name)
{
	uint32_t hash = (uint32_t)elf_gnu_hash(name);
	uint32_t i = h->buckets[hash % h->nbuckets];
	for (; i >= h->symoffset && i - h->symoffset < h->nchain; i++) {
		uint32_t c = h->chain[i - h->symoffset];
		GElf_Sym sym;
		const char *n;
		if ((c | 1) == (hash | 1) && gelf_getsym(syms, (int)i, &sym) &&
		    (n = elf_strptr(elf, strndx, sym.st_name)) &&
		    strcmp(n, name) == 0)
			return sym.st_value;
		if (c & 1)
			break;
	}
	return 0;
}

/* The wanted symbols of .dynsym through its .gnu.hash, a handful of
 * lookups instead of a pass over thousands of names; false where the
 * file has no usable .gnu.hash. */
static bool lookup_dynsym(Elf *elf, struct elf_syms *s)
{
	Elf_Scn *scn = NULL, *dynsym;
	GElf_Shdr sh, dsh;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_HASH)
			break;
	struct gnu_hash h;
	Elf_Data *syms;
	if (!scn || !(dynsym = elf_getscn(elf, sh.sh_link)) ||
	    !gelf_getshdr(dynsym, &dsh) || dsh.sh_type != SHT_DYNSYM ||
	    !(syms = elf_getdata(dynsym, NULL)) ||
	    !gnu_hash_parse(elf, elf_getdata(scn, NULL), &h))
		return false;
	for (int i = 0; i < SYM_COUNT; i++)
		s->value[i] = gnu_hash_lookup(elf, &h, syms, dsh.sh_link,
					      sym_names[i]);
	return true;
}

/* Length of a "3.<minor>.<micro>[tag]" string ending in NUL at p, or 0.
 * 2.x is recognised too, so that it can be named as unsupported. */
static size_t version_at(const char *p, const char *end)
{
	const char *q = p + 2;
	int dots = 0, digits = 0;
	if (end - p < 6 || (p[0] != '2' && p[0] != '3') || p[1] != '.')
		return 0;
	for (; q < end && *q; q++) {
		if (*q >= '0' && *q <= '9')
			digits++;
		else if (*q == '.' && digits && dots == 0)
			dots++, digits = 0;
		else
			break;
	}
	if (dots != 1 || !digits)
		return 0;
	for (; q < end && *q && q - p < 16; q++)
		if (!strchr("abrc+0123456789", *q))
			return 0;
	return q < end && *q == 0 ? (size_t)(q - p) : 0;
}

#define MAX_VERSION_CANDIDATES 16

struct version_vote {
	char text[16];
	unsigned votes;
};

static void vote(struct version_vote *v, size_t *n, const char *s, size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen(v[i].text) == len && memcmp(v[i].text, s, len) == 0) {
			v[i].votes++;
			return;
		}
	if (*n < MAX_VERSION_CANDIDATES && len < sizeof v->text) {
		memcpy(v[*n].text, s, len);
		v[*n].text[len] = 0;
		v[(*n)++].votes = 1;
	}
}

static Elf_Scn *find_section(Elf *elf, size_t shstrndx, const char *name,
			     GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		if (gelf_getshdr(scn, sh) &&
		    (n = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

static void scan_symbols(Elf *elf, GElf_Word type, struct elf_syms *s)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			scan_symtab(elf, scn, &sh, s);
	}
}

/*
 * Before 3.11 the binary does not export its version as a number, but the
 * PY_VERSION literal ("3.9.18") is in .rodata -- sometimes only as the tail
 * of a longer string the linker merged it into (".../versions/3.9.18").
 * Every "3.X.Y" that ends a string is a candidate (a whole string too:
 * Debian's "3.9.2" follows a NUL); the commonest wins.  "3.2.0" never
 * does: it is the Unicode database unicodedata keeps for IDNA (ucd_3_2_0),
 * in every binary that builds the module in.
 */
#define UCD_OLD_VERSION "3.2.0"

void pyd_runtime_scan_version(const void *rodata, size_t size, char *out,
			      size_t outsz)
{
	struct version_vote votes[MAX_VERSION_CANDIDATES];
	size_t nvotes = 0;
	const char *b = rodata, *end = b ? b + size : NULL;
	for (const char *p = b ? b + 1 : NULL; p && p < end; p++) {
		size_t len;
		if ((*p == '2' || *p == '3') &&
		    (!p[-1] || !strchr("0123456789.", p[-1])) &&
		    (len = version_at(p, end)) &&
		    strcmp(p, UCD_OLD_VERSION) != 0)
			vote(votes, &nvotes, p, len);
	}
	size_t best = 0;
	for (size_t i = 1; i < nvotes; i++)
		if (votes[i].votes > votes[best].votes)
			best = i;
	if (nvotes)
		snprintf(out, outsz, "%s", votes[best].text);
}

static void scan_version(Elf *elf, size_t shstrndx, char *out, size_t outsz)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(elf, shstrndx, ".rodata", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	if (d)
		pyd_runtime_scan_version(d->d_buf, d->d_size, out, outsz);
}

/* Load bias: where the first PT_LOAD landed minus where it asked to be. */
static bool load_bias(Elf *elf, const struct pyd_mapping *maps, size_t n,
		      const struct pyd_mapping *file, uint64_t *bias)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t off = ph.p_offset & ~0xfffULL;
		for (size_t j = 0; j < n; j++) {
			if (maps[j].inode != file->inode || maps[j].offset != off ||
			    !maps[j].path || strcmp(maps[j].path, file->path))
				continue;
			*bias = maps[j].start - (ph.p_vaddr & ~0xfffULL);
			return true;
		}
		return false;
	}
	return false;
}

/* Link-time address of the section called name, or 0. */
static uint64_t section_addr(Elf *elf, size_t shstrndx, const char *name)
{
	GElf_Shdr sh;
	return find_section(elf, shstrndx, name, &sh) ? sh.sh_addr : 0;
}

/* The _asyncio module's debug offsets (3.14+) live in a section of their
 * own, so they are found by section name, not by symbol. */
#define ASYNCIO_DEBUG_SECTION ".AsyncioDebug"

/* Where symbol i of s is in the target, or 0 if the file lacks it. */
static uint64_t biased(const struct elf_syms *s, int i, uint64_t bias)
{
	return s->value[i] ? s->value[i] + bias : 0;
}

static bool probe_file(const struct pyd_memsrc *src, const struct pyd_mapping *maps,
		       size_t n, const struct pyd_mapping *m,
		       struct pyd_runtime *rt)
{
	char used[4096];
	int fd = src->open_file ? src->open_file(src->ctx, m, used, sizeof used)
				: -1;
	if (fd < 0)
		return false;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct elf_syms s = {0};
	bool found = false;
	size_t shstrndx;
	if (elf && elf_kind(elf) == ELF_K_ELF &&
	    elf_getshdrstrndx(elf, &shstrndx) == 0) {
		if (!lookup_dynsym(elf, &s))
			scan_symbols(elf, SHT_DYNSYM, &s);
		/* .symtab is many times larger (and every page we touch counts
		 * in our RSS): read it only when the exported symbols do not
		 * say it all, e.g. 3.6's static interp_head. */
		if (!s.value[SYM_RUNTIME])
			scan_symbols(elf, SHT_SYMTAB, &s);
		uint64_t bias;
		if ((s.value[SYM_RUNTIME] || s.value[SYM_TSTATE_CURRENT]) &&
		    load_bias(elf, maps, n, m, &bias)) {
			found = true;
			rt->runtime_addr = biased(&s, SYM_RUNTIME, bias);
			rt->py_version_addr = biased(&s, SYM_PY_VERSION, bias);
			rt->tstate_current_addr =
				biased(&s, SYM_TSTATE_CURRENT, bias);
			rt->interp_head_addr = biased(&s, SYM_INTERP_HEAD, bias);
			rt->code_type_addr = biased(&s, SYM_CODE_TYPE, bias);
			uint64_t ad = section_addr(elf, shstrndx,
						   ASYNCIO_DEBUG_SECTION);
			rt->asyncio_debug_addr = ad ? ad + bias : 0;
			rt->debug_build = s.value[SYM_NEGATIVE_REFCOUNT] != 0;
			GElf_Ehdr eh;
			rt->e_machine = gelf_getehdr(elf, &eh) ? eh.e_machine : 0;
			snprintf(rt->binary, sizeof rt->binary, "%s", used);
			if (!s.value[SYM_PY_VERSION]) /* else the target tells us */
				scan_version(elf, shstrndx, rt->version,
					     sizeof rt->version);
			pyd_parse_version(rt->version, &rt->major, &rt->minor);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

static bool is_libpython(const char *path)
{
	const char *base = strrchr(path, '/');
	return base && strncmp(base + 1, "libpython", 9) == 0;
}

static bool is_asyncio_module(const char *path)
{
	const char *base = strrchr(path, '/');
	return base && strncmp(base + 1, "_asyncio.", 9) == 0;
}

/* A shared _asyncio module (3.14 as Debian builds it): its .AsyncioDebug,
 * if the target has imported it. */
static void find_asyncio_module(const struct pyd_memsrc *src,
				const struct pyd_mapping *maps, size_t n,
				struct pyd_runtime *rt)
{
	for (size_t i = 0; i < n && !rt->asyncio_debug_addr; i++) {
		const struct pyd_mapping *m = &maps[i];
		char used[4096];
		if (skip_path(m->path) || m->offset != 0 ||
		    !is_asyncio_module(m->path) || !src->open_file)
			continue;
		int fd = src->open_file(src->ctx, m, used, sizeof used);
		if (fd < 0)
			continue;
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		size_t shstrndx;
		uint64_t addr, bias;
		if (elf && elf_kind(elf) == ELF_K_ELF &&
		    elf_getshdrstrndx(elf, &shstrndx) == 0 &&
		    (addr = section_addr(elf, shstrndx, ASYNCIO_DEBUG_SECTION)) &&
		    load_bias(elf, maps, n, m, &bias))
			rt->asyncio_debug_addr = addr + bias;
		if (elf)
			elf_end(elf);
		close(fd);
	}
}

enum pyd_err pyd_runtime_find_elf(const struct pyd_memsrc *src,
				  struct pyd_runtime *rt)
{
	const struct pyd_mapping *maps;
	size_t n;
	enum pyd_err err = pyd_runtime_mappings(src, &maps, &n);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	memset(rt, 0, sizeof *rt);
	/* libpython first (the executable is then only a stub), then every
	 * other file once, so an embedding program works too. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const struct pyd_mapping *m = &maps[i];
			if (skip_path(m->path) || m->offset != 0 ||
			    is_libpython(m->path) != (pass == 0))
				continue;
			if (probe_file(src, maps, n, m, rt)) {
				if (!rt->asyncio_debug_addr)
					find_asyncio_module(src, maps, n, rt);
				return PYD_OK;
			}
		}
	}
	return PYD_E_NOTPYTHON;
}
