/*
 * Runtime discovery: which mapped file holds the interpreter, where its
 * globals (_PyRuntime, Py_Version, ...) are at run time, and which CPython
 * it is.  The ELF half (symbols via libelf, PIE load bias) is for sources
 * with files we can open: live processes and cores.  Sources that resolve
 * symbols themselves (lldb) fill struct pyd_runtime from memsrc->symbol.
 */
#ifndef PYD_RUNTIME_H
#define PYD_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "../memsrc/memsrc.h"
#include "../pyd_runtime.h"

/* Look through the target's mapped files for the CPython runtime. */
enum pyd_err pyd_runtime_find_elf(const struct pyd_memsrc *src,
				  struct pyd_runtime *rt);

/* 3.13+ without any binary: find _PyRuntime by its debug-offsets cookie
 * in the target's writable file-backed mappings. */
enum pyd_err pyd_runtime_find_cookie(const struct pyd_memsrc *src,
				     struct pyd_runtime *rt);

/* The same from a source that resolves symbols itself. */
enum pyd_err pyd_runtime_find_symbols(const struct pyd_memsrc *src,
				      struct pyd_runtime *rt);

/*
 * Where the interpreter is, cheapest way first: the symbols a source
 * resolves itself (lldb), the ELF symbols of its mapped files, then
 * (3.13+) the debug-offsets cookie in memory, scanned through scan_src:
 * src itself, or the source under a snapshot recorder, so that the scan's
 * megabytes stay out of the snapshot.
 */
enum pyd_err pyd_runtime_find(const struct pyd_memsrc *src,
			      const struct pyd_memsrc *scan_src,
			      struct pyd_runtime *rt);

/* The PY_VERSION literal ("3.9.18") among a binary's read-only strings
 * (ELF .rodata), for sources that read sections themselves (lldb) and
 * find a CPython older than 3.11, which has no Py_Version; out is left
 * alone if there is none. */
void pyd_runtime_scan_version(const void *rodata, size_t size, char *out,
			      size_t outsz);

/* The source's mappings; a source that cannot list them cannot be
 * searched for an interpreter (PYD_E_NOTPYTHON). */
enum pyd_err pyd_runtime_mappings(const struct pyd_memsrc *src,
				  const struct pyd_mapping **maps, size_t *n);

/* Parse "3.12.1" (or "3.12") into major/minor; false if not a version. */
bool pyd_parse_version(const char *s, int *major, int *minor);

#endif
