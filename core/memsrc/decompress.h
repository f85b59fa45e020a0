/*
 * Compressed cores: systemd-coredump keeps a crash's core compressed
 * (zstd by default; lz4 or xz on older systems), and people gzip cores
 * to move them.  A compressed file is decompressed into an unnamed
 * temporary file (O_TMPFILE under $TMPDIR, else /var/tmp): a core can be
 * larger than memory, and the core reader maps and preads a file.
 */
#ifndef PYD_MEMSRC_DECOMPRESS_H
#define PYD_MEMSRC_DECOMPRESS_H

#include <stddef.h>

#include "../pyd_error.h"

/*
 * If the file open at *fd is compressed (by its magic bytes: gzip, zstd,
 * xz, lz4 frame), replace *fd (closed) by a file descriptor of its
 * decompressed bytes and set *kind to the format's name; else leave both
 * ("" in *kind).  PYD_E_NOTCORE with why in detail for a stream that is
 * corrupt or cut short, or a format this build has no library for;
 * PYD_E_WRITE if the temporary file cannot be written (a full disk).
 */
enum pyd_err pyd_decompress_fd(int *fd, const char **kind, char *detail,
			       size_t detailsz);

#endif
