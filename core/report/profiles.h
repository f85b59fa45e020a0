/*
 * Writing, reading and comparing sampling profiles.  Every writer reads a
 * finished profile (profile/profile.h) and nothing else: the frontend
 * hands it over once sampling (or reading a file) is done, and
 * pyd_report_prof makes the one copy a format needs (pyd_profile_view).
 * The writers document their formats in docs/profile-formats.md.
 */
#ifndef PYD_REPORT_PROFILES_H
#define PYD_REPORT_PROFILES_H

#include "../profile/modes.h"

struct pyd_stream_writer;

/* How pyd_report_prof writes a profile. */
struct pyd_prof_opts {
	bool per_thread; /* a tree per thread; else one merged tree */
	bool active;     /* leave idle threads out (pyd_prof_thread_idle) */
	size_t limit;    /* rows of a format with rows; 0 for all */
	/* Optional: the text of a source line (no newline), or NULL.  Core
	 * reads no files; the frontend knows where they are. */
	const char *(*source_line)(void *ctx, const char *file, int line);
	void *source_ctx;
};

/*
 * The formats a profile is written in: one table (core/report/formats.c)
 * that -f, the -o file name, every --help and the tests read.
 */
struct pyd_prof_format {
	const char *name;        /* -f NAME */
	const char *suffixes[3]; /* file names ending so pick it (-o) */
	const char *summary;     /* for --help: lines of up to 34 columns */
	/* Always every thread's tree, even when asked to merge them: the
	 * format's viewers pick threads themselves. */
	bool per_thread;
	void (*write)(struct pyd_buf *b, const struct pyd_profile *p,
	              size_t limit);
	/* Instead of write, for a format that needs more than the limit
	 * (the heat map's source lines). */
	void (*write_opts)(struct pyd_buf *b, const struct pyd_profile *p,
	                   const struct pyd_prof_opts *o);
	/* A streamed format instead (write and write_opts NULL): written
	 * sample by sample as they are taken (stream.h). */
	const struct pyd_stream_writer *stream;
};

/* Every format, in the order the help lists them; ends with a NULL name. */
extern const struct pyd_prof_format pyd_prof_formats[];

/* The format called name; NULL if none is. */
const struct pyd_prof_format *pyd_prof_format_named(const char *name);
/* The format a file name asks for by its longest matching suffix
 * (x.speedscope.json is speedscope, not json); collapsed if none. */
const struct pyd_prof_format *pyd_prof_format_for_file(const char *path);
/* "table, collapsed, ..., json" into out: every name, for messages. */
void pyd_prof_format_list(char *out, size_t size);

/*
 * Write a finished profile as format f: one merged tree unless
 * o->per_thread (or f->per_thread), without idle threads if o->active,
 * through one copy at most.  PYD_E_USAGE for a streamed format, which no
 * finished profile holds.
 */
enum pyd_err pyd_report_prof(struct pyd_buf *b, const struct pyd_profile *p,
			     const struct pyd_prof_format *f,
			     const struct pyd_prof_opts *o);

/*
 * Reading a saved profile back (core/report/read.c): pystack-dump's JSON
 * tree, collapsed stacks or a recording (sample -f raw), told apart by
 * their content.  data is the
 * whole file (copied).  A finished profile into *out (pyd_profile_free
 * it), or PYD_E_PROFILE with why in detail.
 */
enum pyd_err pyd_profile_read(const char *data, size_t len,
                              struct pyd_profile **out, char *detail,
                              size_t detailsz);

/*
 * Comparing two finished profiles (core/report/diff.c): now (the newer)
 * against base, by each frame's share of its profile's samples.  The formats: "table"
 * (functions that grew and shrank most, limit rows each; 0: all),
 * "collapsed" (each stack's samples in both and the change of its
 * share), "flamegraph" (now's graph coloured by the change).
 */
extern const char *const pyd_diff_formats[];
/* PYD_E_USAGE if format is none of them. */
enum pyd_err pyd_report_diff(struct pyd_buf *b, const struct pyd_profile *base,
                             const struct pyd_profile *now,
                             const char *format, size_t limit);

/*
 * The writers: every one lists p->threads, each a call tree; pyd_report_prof
 * hands them a merged view for one tree of all threads.
 */

/* A task boundary as shown: "<task NAME>" (or a greenlet's, "<greenlet
 * NAME>", as it is), into buf. */
const char *pyd_task_label(const char *name, char *buf, size_t bufsz);
/* How a frame is shown: "qualname (file:line)", "qualname (file)" when
 * lines are off, "<task NAME>" for a task boundary.  Into buf. */
const char *pyd_prof_frame_label(const struct pyd_prof_frame *f, char *buf,
				 size_t bufsz);

/* "process 1234 (python3 app.py)": how reports name a process of a
 * profile that keeps them apart; into buf. */
const char *pyd_prof_process_label(const struct pyd_profile *p, uint32_t proc,
                                   char *buf, size_t bufsz);
/* The thread whose node is node; NULL if node is no thread's. */
const struct pyd_prof_thread *pyd_prof_thread_of(const struct pyd_profile *p,
                                                 uint32_t node);

/*
 * Depth first over the subtree below node top (top excluded), parents
 * before children:
 *
 *	struct pyd_prof_walk w;
 *	uint32_t n;
 *	for (pyd_prof_walk_start(&w, p, top); pyd_prof_walk_next(&w, &n);)
 *		... w.depth is n's depth: 1 for a child of top ...
 *
 * A node at depth d comes after every node deeper than d on the path
 * before it has been left, so a writer keeping the path from top trims it
 * to d - 1 entries and pushes n.
 */
struct pyd_prof_walk {
	const struct pyd_profile *p;
	uint32_t top, next;
	size_t depth, next_depth;
};
void pyd_prof_walk_start(struct pyd_prof_walk *w, const struct pyd_profile *p,
                         uint32_t top);
bool pyd_prof_walk_next(struct pyd_prof_walk *w, uint32_t *node);

/*
 * An HTML page of a profile: the template page (embedded at build time,
 * tools/embed.py) with its "@PYD_DATA@" marker, inside a script element,
 * replaced by the JSON in data (every '<' escaped); "null" if data
 * failed, and b fails too.
 */
void pyd_prof_page(struct pyd_buf *b, const char *page,
                   const struct pyd_buf *data);

/* A function's samples: frames that differ only in their line are one
 * function, named by the frame of index frame. */
struct pyd_prof_func {
	uint32_t frame;
	uint64_t self;       /* samples with the function innermost */
	uint64_t self_await; /* of those, of tasks in await */
	uint64_t cum; /* samples with it anywhere on the stack, once each */
};

/*
 * Every function of a finished profile, unsorted, into *rows (free it);
 * their number, or SIZE_MAX if out of memory.  self: per node, the
 * samples to count instead of the nodes' own (a time window's, threads
 * left out as 0s), self_await then staying 0; NULL: the nodes'.
 */
size_t pyd_prof_functions(const struct pyd_profile *p, const uint64_t *self,
                          struct pyd_prof_func **rows);

/*
 * The writers of the formats (formats.c lists them): each writes the
 * whole profile into b.  limit: most rows a format with rows shows
 * (0: all); the others show everything.
 */

/* Per function, like pstats: direct and cumulative samples, percentages,
 * estimated times; the most expensive limit rows (0: all). */
void pyd_report_prof_table(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* "frame;frame;frame count" lines, outermost first (flamegraph.pl). */
void pyd_report_prof_collapsed(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The trees as flat JSON (docs/profile-formats.md). */
void pyd_report_prof_json(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* Source files with their samples per line: one HTML page, their text
 * from o->source_line. */
void pyd_report_prof_heatmap(struct pyd_buf *b, const struct pyd_profile *p,
			const struct pyd_prof_opts *o);
/* One self-contained interactive HTML page. */
void pyd_report_prof_flamegraph(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The flame graph of p as a differential one: base_total holds, per node
 * of p, the samples of the same path in the profile compared against,
 * which had base_samples in all; frames are coloured by the change of
 * their share. */
void pyd_report_flamegraph_diff(struct pyd_buf *b, const struct pyd_profile *p,
                                const uint64_t *base_total,
                                uint64_t base_samples);
/* speedscope's file format (one sampled profile per thread). */
void pyd_report_prof_speedscope(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The Firefox Profiler's Gecko profile format. */
void pyd_report_prof_gecko(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* pprof's profile.proto, gzipped: binary, b->len bytes. */
void pyd_report_prof_pprof(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The marshal'd stats pstats.Stats loads: binary, b->len bytes. */
void pyd_report_prof_pstats(struct pyd_buf *b, const struct pyd_profile *p,
			size_t limit);
/* The streamed formats (stream.h): recordings (docs/recording-format.md)
 * and a JSON line per sample. */
extern const struct pyd_stream_writer pyd_stream_raw, pyd_stream_jsonl;

#endif
