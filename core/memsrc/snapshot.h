/*
 * Snapshot files: the memory a decode read, kept so the dump can be
 * decoded again anywhere, with no process and no core.
 *
 * A bug report then carries kilobytes instead of a multi-GB core, and the
 * tests get offline fixtures.  Recording wraps any memory source and keeps
 * every byte that was read successfully; replaying is a memory source that
 * answers exactly those reads and refuses the rest, so the decoders follow
 * the same path they took against the real target.  The file format is in
 * docs/snapshot-format.md.
 *
 * A snapshot holds raw bytes of the target's memory (only what the decoder
 * read, but that can include strings the program handles), so it is
 * written with mode 0600.  Neither half is thread-safe, like the sources.
 */
#ifndef PYD_MEMSRC_SNAPSHOT_H
#define PYD_MEMSRC_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "memsrc.h"

/* Where the interpreter is (pyd_runtime.h): a snapshot keeps it, so that
 * replaying needs no binary; its callers only pass it through. */
struct pyd_runtime;

/* Recording: wrap any memory source; every successful read is remembered
 * (ranges merged). */
struct pyd_recorder;

/* inner must outlive the recorder.  PYD_OK or PYD_E_NOMEM. */
enum pyd_err pyd_recorder_new(const struct pyd_memsrc *inner,
			      struct pyd_recorder **out);

/*
 * read, mappings, threads, symbol and open_file pass through to inner
 * (each NULL where inner's is), so runtime discovery works through it.
 * Successful reads are recorded; a range read again has its bytes
 * replaced, so the file holds the latest value of every byte.  The
 * mappings and the LAST threads listing are copied for the file.
 * Re-reading recorded memory costs a binary search and a memcpy, and
 * memory use is bounded by the distinct bytes read (at most twice that).
 */
const struct pyd_memsrc *pyd_recorder_memsrc(struct pyd_recorder *r);

/* What the source is ("live", "core", "lldb", ...), kept in the file so
 * a reader of a bug report knows where it came from.  Default "unknown". */
void pyd_recorder_set_source_kind(struct pyd_recorder *r, const char *kind);

/* What the dump that records read beyond the stacks, kept in the file so
 * a replay asking for more can say it is not there, rather than that the
 * target's memory was unreadable.  Default none. */
#define PYD_SNAP_HOLDS_VARIABLES 1u /* --locals */
void pyd_recorder_set_holds(struct pyd_recorder *r, uint32_t holds);

/*
 * Write everything recorded, with rt (the version facts) and pid (0 if
 * unknown, e.g. from a core), to path.  Atomic: a temporary file in the
 * same directory is renamed over path, so a reader never sees half a
 * snapshot.  PYD_E_WRITE on I/O errors (detail gives strerror),
 * PYD_E_NOMEM if recording ran out of memory (the snapshot would lack
 * bytes the decode read).
 */
enum pyd_err pyd_snapshot_write(struct pyd_recorder *r,
				const struct pyd_runtime *rt, int pid,
				const char *path, char *detail,
				size_t detailsz);
void pyd_recorder_free(struct pyd_recorder *r);

/* Replaying */
struct pyd_snapshot;

/*
 * PYD_E_SNAPSHOT for a file that cannot be opened, is not a snapshot, is
 * truncated or corrupt, or has a newer format version; detail says which.
 * The whole file is validated here, so the memory source never fails on
 * a malformed file later.
 */
enum pyd_err pyd_snapshot_open(const char *path, struct pyd_snapshot **out,
			       char *detail, size_t detailsz);

/*
 * read() succeeds only if the whole range was recorded, else PYD_E_READ;
 * mappings() and threads() return the recorded ones (NULL if they were
 * never listed while recording); symbol and open_file are NULL: the
 * runtime comes from the file (pyd_snapshot_runtime), not from binaries.
 */
const struct pyd_memsrc *pyd_snapshot_memsrc(struct pyd_snapshot *s);
const struct pyd_runtime *pyd_snapshot_runtime(const struct pyd_snapshot *s);
/* The target's pid when recorded, 0 if unknown. */
int pyd_snapshot_pid(const struct pyd_snapshot *s);

/* Where and when the snapshot was taken, for reports. */
struct pyd_snapshot_meta {
	int64_t created;          /* Unix time, seconds */
	const char *tool_version; /* "pystack-dump 0.1.0" */
	const char *source_kind;  /* "live", "core", ... */
	/* PYD_SNAP_HOLDS_*; holds_known false: written before the field */
	uint32_t holds;
	bool holds_known;
};
const struct pyd_snapshot_meta *
pyd_snapshot_meta(const struct pyd_snapshot *s);

void pyd_snapshot_close(struct pyd_snapshot *s);

#endif
