/*
 * CPython 3.13+ publishes the offsets debuggers need in a _Py_DebugOffsets
 * block at the very start of _PyRuntime (cookie "xdebugpy").  Reading them
 * from the target beats any table we ship: it is right for patch releases
 * and distribution builds we never measured.
 */
#ifndef PYD_CPYTHON_DEBUG_OFFSETS_H
#define PYD_CPYTHON_DEBUG_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* Bytes to read from the start of _PyRuntime: the block is 584 bytes in
 * 3.13, 760 in 3.14 and 888 in 3.15, so this leaves room to grow. */
#define PY_DEBUG_OFFSETS_MAX_SIZE 4096

/*
 * The members of minor version 3.minor's block, in block order, into
 * names (up to max of them); returns how many there are, 0 for a version
 * whose block we do not know.
 */
size_t py_debug_offsets_members(int minor, const char **names, size_t max);

/*
 * The block's header: PY_VERSION_HEX and whether the build is
 * free-threaded (Py_GIL_DISABLED), which every block says even where its
 * members are of an order we do not know (a pre-release).  -1 if raw is
 * not a block's start.
 */
int py_debug_offsets_header(const uint8_t *raw, size_t len, uint64_t *hex,
			    bool *free_threaded);

/*
 * Parse a _Py_DebugOffsets block (raw bytes read from the start of
 * _PyRuntime).  Fills *out starting from the built-in layout for that
 * version and kind of build (for fields the block does not publish),
 * overriding every field the block does publish.  debug_build picks the
 * built-in base with the block's free_threaded (Py_DEBUG is not in the
 * block).
 *
 * Returns 0, or -1 if the cookie is not "xdebugpy", the block is truncated,
 * the version is not 3.13+ (or a release whose block layout we do not
 * know: a newer one, or a pre-release), or any offset is implausible
 * (> 64 KiB, or outside the struct size the block itself gives).  *out is
 * only written on success.  *version_hex gets PY_VERSION_HEX from the
 * block whenever the cookie matched, so a caller can say which version it
 * failed on.
 */
int py_layout_from_debug_offsets(const uint8_t *raw, size_t len,
				 bool debug_build, struct py_layout *out,
				 uint64_t *version_hex);

#endif
