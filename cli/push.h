/*
 * pystack-dump sample --push URL: each interval's pprof sent to Grafana
 * Pyroscope's ingest API (POST /ingest?name=APP{k=v}&from=&until=
 * &format=pprof&sampleRate=&spyName=pystack-dump, the gzipped pprof as
 * the body) by a thread of its own, through a bounded queue, so that a
 * slow or absent server never stalls sampling.  push.c with libcurl;
 * push_none.c where the build has no libcurl (the static binary).
 */
#ifndef PYD_CLI_PUSH_H
#define PYD_CLI_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"

/* Profiles waiting to be sent; when one more comes, the oldest is
 * dropped (said once, counted).  With --every's default of 10 s, a
 * server away for 80 s loses nothing. */
#define PUSH_QUEUE 8
/* At the end (-d, Ctrl-C, the target's exit) what is queued is sent for
 * at most this long. */
#define PUSH_FLUSH_S 5
/* A failed send is tried again after 0.5 s, then twice as long each time
 * up to this. */
#define PUSH_BACKOFF_MAX_S 8
/* --every's interval when --push is given without it (Pyroscope's
 * agents send every 10 s). */
#define PUSH_EVERY_S 10.0

struct push;

/* What became of the profiles handed to push_send. */
struct push_counts {
	unsigned long long sent;     /* accepted (HTTP 2xx) */
	unsigned long long retried;  /* sends tried again */
	unsigned long long dropped;  /* the oldest, from a full queue */
	unsigned long long rejected; /* refused (4xx but 429): not retried */
	unsigned long long unsent;   /* still queued when the flush ended */
};

/* Check --push URL, --app NAME (NULL: the process's name, given to
 * push_start) and --labels k=v,... (NULL: none) and keep them in *out.
 * 0; PYD_E_USAGE with what is wrong in err; PYD_E_UNSUPPORTED with why
 * in err (a build without libcurl); PYD_E_NOMEM. */
int push_open(struct push **out, const char *url, const char *app,
              const char *labels, char *err, size_t errsz);
/* Start sending, as process_name's profiles unless --app named them
 * (characters Pyroscope does not take become '_'); 0 or PYD_E_NOMEM. */
int push_start(struct push *p, const char *process_name);
/* Queue body (a gzipped pprof; its memory is taken, *body left empty)
 * for the interval [from_us, until_us) (Unix microseconds), sampled at
 * rate_hz. */
void push_send(struct push *p, struct pyd_buf *body, uint64_t from_us,
               uint64_t until_us, unsigned rate_hz);
/* Send what is queued for at most PUSH_FLUSH_S, stop, free p; what
 * became of the profiles. */
struct push_counts push_close(struct push *p);
/* The URL as messages show it: without user:password. */
const char *push_shown_url(const struct push *p);

#endif
