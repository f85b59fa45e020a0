/*
 * Streamed formats: a profile's samples written one by one as they are
 * taken (-f raw, a recording; -f jsonl), not from the finished tree, and
 * recordings read back into a profile (pystack-dump report).
 *
 * A stream hooks the profile (on_sample), so every sample that reaches
 * pyd_profile_add, from a sampler or from a recording replayed, is
 * written.  Records wait in memory and are handed to the caller's sink in
 * whole records (raw: whole zstd frames) once 64 KB wait or the writer's
 * period has passed, so that a file cut off (a profiler killed) loses at
 * most its tail.  Core does no I/O: the sink writes.
 * docs/recording-format.md describes the raw format.
 */
#ifndef PYD_REPORT_STREAM_H
#define PYD_REPORT_STREAM_H

#include "profiles.h"

/* What a streamed format's row in the table of formats points to. */
struct pyd_stream_writer {
	bool compressed;  /* handed out as zstd frames */
	uint64_t flush_us; /* the longest a record waits in memory */
	/* The writer's state, and its records: head before the first
	 * sample, each sample, the tail at the end (the run's counts).
	 * All but sample are optional. */
	void *(*open)(void);
	void (*head)(struct pyd_buf *b, const struct pyd_profile *p, void *st);
	void (*sample)(struct pyd_buf *b, const struct pyd_profile *p,
	               const struct pyd_prof_sample *s, void *st);
	void (*tail)(struct pyd_buf *b, const struct pyd_profile *p, void *st);
	void (*close)(void *st);
};

/* Takes n bytes to write; false if they could not be (the caller keeps
 * why). */
typedef bool (*pyd_stream_sink)(void *ctx, const void *data, size_t n);

struct pyd_stream;

/*
 * Write every sample p counts from now on in streamed format f, through
 * sink.  PYD_E_USAGE if f is not a streamed format.
 */
enum pyd_err pyd_stream_open(struct pyd_profile *p,
                             const struct pyd_prof_format *f,
                             pyd_stream_sink sink, void *ctx,
                             struct pyd_stream **out);
/* Hand what waits to the sink if it is due (call it every round, so
 * records do not wait while no sample comes).  false once the sink or
 * memory failed: the stream then writes nothing more. */
bool pyd_stream_tick(struct pyd_stream *s);
/* Write the tail (from p->meta: set its counts first), hand everything
 * to the sink, unhook the profile and free; false as for tick. */
bool pyd_stream_close(struct pyd_stream *s);

/* How pyd_replay went. */
struct pyd_replay {
	double from_s, to_s; /* in: the samples taken in [from_s, to_s]
	                      * seconds after the start; to_s 0: to the end */
	bool cut;   /* out: the recording ends mid-record: the profiler was
	             * killed, or the file copied while being written */
	bool ended; /* out: it has its end record (the run's counts) */
};

/*
 * Feed the samples of the recording data[0..len) into p (made with
 * pyd_profile_new; its lines are dropped if the recording has none), and
 * fill p's meta as the recording's run (for a slice, its counts are the
 * slice's).  PYD_E_PROFILE with why in detail for a file that is no
 * recording, of a newer format version, or corrupt: the samples before
 * the corruption are in p.  A recording cut short is no error (r->cut).
 */
enum pyd_err pyd_replay(const void *data, size_t len, struct pyd_profile *p,
                        struct pyd_replay *r, char *detail, size_t detailsz);

#endif
