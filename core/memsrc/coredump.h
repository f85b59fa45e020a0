/*
 * Memory source for an ELF core file (libelf): memory from the PT_LOAD
 * segments, mappings from the NT_FILE note, threads from NT_PRSTATUS.
 * Pages the core left out (read-only file-backed ones) are read from the
 * mapped files themselves, found through --exe / --sysroot for a core
 * that came from another machine.
 */
#ifndef PYD_MEMSRC_COREDUMP_H
#define PYD_MEMSRC_COREDUMP_H

#include <stdbool.h>

#include "memsrc.h"

struct pyd_core_opts {
	const char *exe;     /* the executable, if not where the core says */
	const char *sysroot; /* prefix for every other mapped file */
};

struct pyd_core;

/*
 * PYD_E_NOTCORE, PYD_E_FOREIGN, PYD_E_EXEMISMATCH or PYD_OK; *detail
 * explains.  A truncated core still opens (what it holds is readable):
 * pyd_core_truncated() tells.
 */
enum pyd_err pyd_core_open(const char *path, const struct pyd_core_opts *o,
			   struct pyd_core **out, char *detail, size_t detailsz);
const struct pyd_memsrc *pyd_core_memsrc(struct pyd_core *c);
int pyd_core_pid(const struct pyd_core *c);
/* The format the core was decompressed from ("zstd", ...), "" if none. */
const char *pyd_core_compression(const struct pyd_core *c);
/* Bytes the segments need beyond the end of the file; 0 if complete. */
uint64_t pyd_core_missing_bytes(const struct pyd_core *c);
/* Without a sysroot: the first ELF file the core maps (its path as the
 * core names it) that is not here at that path, or is another build --
 * the process ran in another root (a container, a chroot, another
 * machine) or its files changed since, so this machine's files of the
 * paths it names are not its own; NULL if each one matches, or a sysroot
 * was given. */
const char *pyd_core_other_root(const struct pyd_core *c);
/* Warnings gathered so far (build-id mismatches, ...), one per line; "" if
 * none. */
const char *pyd_core_warnings(const struct pyd_core *c);
void pyd_core_close(struct pyd_core *c);

#endif
