/*
 * What a dump or a sampler reads (pystack-dump, the plugins): a live
 * process, a core file or a snapshot, optionally recorded into a new
 * snapshot as it is read.
 */
#ifndef PYD_FRONTEND_TARGET_H
#define PYD_FRONTEND_TARGET_H

#include <stdbool.h>

#include "../core/memsrc/coredump.h"
#include "../core/memsrc/live.h"
#include "../core/memsrc/snapshot.h"
#include "../core/pyd.h"
#include "explain.h"

struct pyd_crash;

struct target_spec {
	int pid;              /* live process, or 0 */
	const char *core;     /* core file, or NULL */
	const char *exe;      /* --exe */
	const char *sysroot;  /* --sysroot */
	const char *snapshot; /* snapshot to decode, or NULL */
	bool record;          /* --save-snapshot: record what is read */
	const struct pyd_crash *crash; /* --coredump: the crash's records */
};

struct target {
	struct pyd_live *live;
	struct pyd_core *core;
	struct pyd_snapshot *snap;
	struct pyd_recorder *rec;
	const struct pyd_memsrc *src;   /* what the decoders read */
	const struct pyd_memsrc *inner; /* the same, unrecorded */
	int pid;                      /* 0 if unknown */
	char source_root[64];         /* prefix for source files, or "" */
	const char *kind;             /* "process", "core", "snapshot" */
};

/* Open the source the spec names; on failure *detail says why. */
enum pyd_err target_open(const struct target_spec *spec, struct target *t,
			 char *detail, size_t detailsz);
/* Where the interpreter is: from the snapshot, or the binaries' symbols,
 * or (3.13+, no binaries) the debug-offsets cookie. */
enum pyd_err target_runtime(struct target *t, struct pyd_runtime *rt,
			    char *detail, size_t detailsz);
void target_close(struct target *t);
/* The message table's words for what the spec names, said by prog. */
struct pyd_explain target_words(const struct target_spec *spec,
				const char *prog, const char *detail);

#endif
