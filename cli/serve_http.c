/*
 * pystack-dump serve's HTTP server, on libmicrohttpd.
 *
 * Concurrency: a thread per connection (MHD_USE_THREAD_PER_CONNECTION,
 * at most MAX_CONNECTIONS), each request doing its work in its thread on
 * state of its own: a profile opens its own procset, sessions and
 * samplers and aggregates into its own profile, a stack dump runs
 * pyd_dump_run as pystack-dump PID does.  Core and the front end keep no
 * mutable static state, so nothing is shared between requests but the
 * counters below (atomics).  Threads rather than a child process per
 * request: a profile's samplers keep their caches warm across rounds and
 * the profile is rendered where it was taken, with no copy through a
 * pipe; a forked child of a threaded process could only exec, and would
 * then pay a session's start-up per request.  At most MAX_PROFILES
 * profiles run at once: one more is answered 503 with Retry-After, never
 * queued.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "../core/memsrc/live.h"
#include "../frontend/dump.h"
#include "../frontend/procset.h"
#include "../frontend/render.h"
#include "cli.h"
#include "serve.h"

#define PROG "pystack-dump serve"
#define MAX_SECONDS 300      /* a profile's longest */
#define DEFAULT_SECONDS 30.0 /* Go's, when seconds= is absent */
#define MAX_PROFILES 4       /* profiles sampling at once */
#define MAX_CONNECTIONS 64
#define IDLE_TIMEOUT_S 60    /* an idle connection is closed */
/* A request's line and headers fit in this (MHD answers a longer URL
 * 414, longer headers 431). */
#define REQUEST_MEMORY (16 * 1024)
/* How often a profile looks whether its client hung up. */
#define CLIENT_CHECK_NS 100000000LL
/* How long a stop waits for the requests in progress. */
#define DRAIN_NS 10000000000LL

struct server {
	const struct serve_config *cfg;
	atomic_int profiles; /* sampling now */
	atomic_int inflight; /* requests begun and not completed */
	atomic_bool stopping;
};

/* One request, from its first call to its completion (the log line). */
struct request {
	int64_t start;
	char line[320]; /* METHOD path?query, cut */
	unsigned status;
	size_t bytes;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- answers ---- */

/* body (taken: freed here) as the answer. */
static enum MHD_Result answer(struct MHD_Connection *c, struct request *q,
                              unsigned status, const char *type,
                              struct pyd_buf *body)
{
	if (body->failed) {
		pyd_buf_free(body);
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
		pyd_buf_printf(body, "out of memory\n");
	}
	struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(
	    body->len, body->data, free);
	if (!r) {
		pyd_buf_free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "10");
	q->status = status;
	q->bytes = body->len;
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static const char text_type[] = "text/plain; charset=utf-8";

static enum MHD_Result answer_text(struct MHD_Connection *c,
                                   struct request *q, unsigned status,
                                   const char *text)
{
	struct pyd_buf b = {0};
	pyd_buf_printf(&b, "%s\n", text);
	return answer(c, q, status, text_type, &b);
}

/* The HTTP status for a target that could not be read. */
static unsigned status_of(enum pyd_err err)
{
	static const unsigned statuses[] = {
	    [PYD_E_NOPROC] = MHD_HTTP_NOT_FOUND,
	    [PYD_E_EXITED] = MHD_HTTP_NOT_FOUND,
	    [PYD_E_PERM] = MHD_HTTP_FORBIDDEN,
	    [PYD_E_NOTPYTHON] = MHD_HTTP_UNPROCESSABLE_CONTENT,
	    [PYD_E_UNSUPPORTED] = MHD_HTTP_NOT_IMPLEMENTED,
	    [PYD_E_NOMEM] = MHD_HTTP_SERVICE_UNAVAILABLE,
	};
	unsigned s = (size_t)err < sizeof statuses / sizeof *statuses
	                 ? statuses[err]
	                 : 0;
	return s ? s : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* Why process pid (the first that failed) could not be read, as the
 * message table says it, into b. */
static void explain_failure(struct pyd_buf *b, int pid, enum pyd_err err,
                            bool mode_refused, const char *detail)
{
	struct target_spec spec = {.pid = pid};
	struct pyd_explain e = target_words(&spec, PROG, detail);
	pyd_explain(b, &e, mode_refused ? PYD_SAY_MODE_UNSUPPORTED
	                                : PYD_SAY_ERROR, err);
}

/* ---- the processes served ---- */

/* The first process of a selection that failed to open. */
struct failure {
	int pid;
	enum pyd_err err;
	char detail[512];
};

/* Open the processes served into ps for prof; 0 if at least one opened
 * (or --all), else the status with why in body. */
static unsigned open_selection(const struct serve_config *cfg,
                               struct procset *ps, struct pyd_profile *prof,
                               enum pyd_sample_mode mode, struct pyd_buf *body)
{
	if (cfg->opt.all) {
		procset_open_all(ps, prof, mode);
		return 0;
	}
	procset_init(ps, prof, mode, false);
	struct failure f = {0};
	for (size_t i = 0; i < cfg->npids; i++) {
		char detail[512] = "";
		enum pyd_err err = procset_add(ps, cfg->pids[i], detail,
		                               sizeof detail);
		if (err && !f.err) {
			f = (struct failure){.pid = cfg->pids[i], .err = err};
			snprintf(f.detail, sizeof f.detail, "%s", detail);
		}
	}
	if (procset_sampling(ps))
		return 0;
	explain_failure(body, f.pid, f.err,
	                f.err == PYD_E_UNSUPPORTED && ps->mode_unsupported,
	                f.detail);
	return status_of(f.err);
}

/* The pids of the processes served that run CPython now, malloc'd. */
static int *python_pids(const struct serve_config *cfg, size_t *n)
{
	struct pyd_profile *prof = pyd_profile_new(false, 0);
	struct procset ps;
	struct pyd_buf why = {0}; /* unused: none is an empty list */
	int *pids = NULL;
	*n = 0;
	if (!prof)
		return NULL;
	if (!open_selection(cfg, &ps, prof, PYD_SAMPLE_WALL, &why) &&
	    (pids = calloc(ps.n + 1, sizeof *pids)))
		for (size_t i = 0; i < ps.n; i++)
			if (ps.v[i]->sampling)
				pids[(*n)++] = ps.v[i]->pid;
	procset_close(&ps);
	pyd_profile_free(prof);
	pyd_buf_free(&why);
	return pids;
}

/* ---- /debug/pprof/profile ---- */

/* A profile being taken, for the sampling loop's calls. */
struct take {
	struct server *s;
	struct procset ps;
	int fd; /* the client's connection */
	int64_t next_check;
	bool client_gone;
};

static bool hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) > 0 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The loop's stop: the server stops, or the client hung up (looked at
 * every CLIENT_CHECK_NS: a round at max rate must not pay a poll). */
static bool stop_profile(void *ctx)
{
	struct take *t = ctx;
	if (atomic_load(&t->s->stopping))
		return true;
	int64_t now = now_ns();
	if (now < t->next_check)
		return false;
	t->next_check = now + CLIENT_CHECK_NS;
	return (t->client_gone = hung_up(t->fd));
}

static enum pyd_err take_round(void *ctx, int64_t now, unsigned *nstacks)
{
	struct take *t = ctx;
	return procset_round(&t->ps, now, nstacks);
}

static uint64_t unix_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* Sample for seconds into prof, as pystack-dump sample does. */
static void sample(struct take *t, struct pyd_profile *prof, double seconds)
{
	const struct pyd_opts *o = &t->s->cfg->opt;
	struct pyd_prof_meta *m = &prof->meta;
	m->pid = t->ps.root;
	m->mode = t->ps.mode;
	m->rate_hz = o->rate;
	m->start_unix_us = unix_us();
	struct pyd_sample_loop l = {.rate = o->rate,
	                            .max_seconds = seconds,
	                            .stop = stop_profile,
	                            .round = take_round,
	                            .ctx = t};
	pyd_sample_loop(NULL, &l, m);
	m->python_version = prof->nprocesses ? prof->processes[0].python_version
	                                     : NULL;
	m->reads = procset_reads(&t->ps);
	m->interval_s = m->ticks ? m->duration_s / (double)m->ticks : 0;
}

/* A profile of the processes served into body; the status. */
static unsigned take_profile(struct server *s, int fd, double seconds,
                             enum pyd_sample_mode mode, struct pyd_buf *body)
{
	struct pyd_profile *prof = pyd_profile_new(true, 0);
	if (!prof) {
		body->failed = true; /* answered as out of memory */
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	prof->gc = !s->cfg->opt.no_gc;
	prof->by_process = true; /* every sample labelled with its process */
	struct take t = {.s = s, .fd = fd};
	unsigned status = open_selection(s->cfg, &t.ps, prof, mode, body);
	if (!status) {
		sample(&t, prof, seconds);
		struct pyd_opts o = s->cfg->opt;
		o.format = pyd_prof_format_named("pprof");
		o.limit = 0;
		status = pyd_profile_render(body, prof, &o, NULL)
		             ? MHD_HTTP_SERVICE_UNAVAILABLE
		             : MHD_HTTP_OK;
	}
	procset_close(&t.ps);
	pyd_profile_free(prof);
	return status;
}

/* seconds= and mode=, or false with why. */
static bool profile_params(struct MHD_Connection *c, double *seconds,
                           enum pyd_sample_mode *mode, char *why, size_t size)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
	                                            "seconds");
	const char *m = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
	                                            "mode");
	char *end = NULL;
	*seconds = s ? strtod(s, &end) : DEFAULT_SECONDS;
	*mode = PYD_SAMPLE_WALL;
	if (s && (end == s || *end || !isfinite(*seconds) || *seconds <= 0 ||
	          *seconds > MAX_SECONDS)) {
		snprintf(why, size, "seconds= wants a number of seconds above 0 "
		         "and at most %d, not '%.64s'", MAX_SECONDS, s);
		return false;
	}
	if (m && !pyd_sample_mode_named(m, mode)) {
		snprintf(why, size, "mode= wants wall, cpu, gil, async, greenlet "
		         "or exception, not '%.64s'", m);
		return false;
	}
	return true;
}

static int connection_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return i ? i->connect_fd : -1;
}

static enum MHD_Result profile(struct server *s, struct MHD_Connection *c,
                               struct request *q)
{
	double seconds;
	enum pyd_sample_mode mode;
	char why[256];
	if (!profile_params(c, &seconds, &mode, why, sizeof why))
		return answer_text(c, q, MHD_HTTP_BAD_REQUEST, why);
	if (atomic_fetch_add(&s->profiles, 1) >= MAX_PROFILES) {
		atomic_fetch_sub(&s->profiles, 1);
		snprintf(why, sizeof why, "busy: %d profiles are being taken; "
		         "try again after Retry-After seconds", MAX_PROFILES);
		return answer_text(c, q, MHD_HTTP_SERVICE_UNAVAILABLE, why);
	}
	struct pyd_buf body = {0};
	unsigned status = take_profile(s, connection_fd(c), seconds, mode, &body);
	atomic_fetch_sub(&s->profiles, 1);
	return answer(c, q, status,
	              status == MHD_HTTP_OK ? "application/octet-stream"
	                                    : text_type,
	              &body);
}

/* ---- /debug/pprof/stacks ---- */

/* A process that gave no dump: its entry, with why (msg). */
static void no_dump(struct pyd_buf *b, bool json, int pid,
                    const struct pyd_buf *msg)
{
	const char *why = msg->data ? msg->data : "";
	if (!json) {
		pyd_buf_printf(b, "Process %d: %s", pid, why);
		return;
	}
	pyd_buf_printf(b, "{\"pid\": %d, \"error\": ", pid);
	pyd_buf_json_str(b, why);
	pyd_buf_printf(b, "}\n");
}

/* Process pid's dump into b; its exit status. */
static enum pyd_err dump_process(const struct serve_config *cfg, int pid,
                                 bool json, struct pyd_buf *b,
                                 struct pyd_buf *msg)
{
	char cmdline[1024];
	pyd_live_cmdline(pid, cmdline, sizeof cmdline);
	struct pyd_dump_job job = {.prog = PROG,
	                           .spec = {.pid = pid},
	                           .opt = cfg->opt,
	                           .family = true,
	                           .ppid = pyd_live_parent(pid),
	                           .cmdline = cmdline};
	job.opt.json = json;
	struct pyd_buf out = {0};
	struct pyd_dump_outcome how;
	enum pyd_err err = pyd_dump_run(&job, &out, msg, &how);
	bool shown = out.len > 0;
	if (shown)
		pyd_buf_put(b, out.data, out.len);
	else
		no_dump(b, json, pid, msg);
	pyd_buf_free(&out);
	return shown || !pyd_err_fatal(err) ? PYD_OK : err;
}

static unsigned take_stacks(const struct serve_config *cfg, bool json,
                            struct pyd_buf *b)
{
	size_t n = cfg->npids;
	int *found = cfg->opt.all ? python_pids(cfg, &n) : NULL;
	const int *pids = cfg->opt.all ? found : cfg->pids;
	enum pyd_err first = PYD_OK;
	size_t shown = 0;
	if (json)
		pyd_buf_printf(b, "{\"processes\": [\n");
	for (size_t i = 0; i < n; i++) {
		struct pyd_buf msg = {0};
		if (i)
			pyd_buf_printf(b, json ? ",\n" : "\n");
		enum pyd_err err = dump_process(cfg, pids[i], json, b, &msg);
		shown += !err;
		if (err && !first)
			first = err;
		pyd_buf_free(&msg);
	}
	if (json)
		pyd_buf_printf(b, "]}\n");
	free(found);
	return shown || !first ? MHD_HTTP_OK : status_of(first);
}

static enum MHD_Result stacks(struct server *s, struct MHD_Connection *c,
                              struct request *q)
{
	const char *j = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
	                                            "json");
	bool json = j && strcmp(j, "0");
	struct pyd_buf b = {0};
	unsigned status = take_stacks(s->cfg, json, &b);
	return answer(c, q, status, json ? "application/json" : text_type, &b);
}

/* ---- / ---- */

static void list_processes(const struct serve_config *cfg, struct pyd_buf *b)
{
	size_t n = cfg->npids;
	int *found = cfg->opt.all ? python_pids(cfg, &n) : NULL;
	const int *pids = cfg->opt.all ? found : cfg->pids;
	pyd_buf_printf(b, cfg->opt.all ? "Every CPython process this server "
	                                 "may read; now %zu:\n"
	                               : "%zu process(es):\n", n);
	for (size_t i = 0; i < n; i++) {
		char cmd[1024], line[4097];
		pyd_live_cmdline(pids[i], cmd, sizeof cmd);
		pyd_one_line(cmd[0] ? cmd : "(gone)", line, sizeof line);
		pyd_buf_printf(b, "  pid %d: %s\n", pids[i], line);
	}
	free(found);
}

static enum MHD_Result index_page(struct server *s, struct MHD_Connection *c,
                                  struct request *q)
{
	struct pyd_buf b = {0};
	pyd_buf_printf(&b,
	    "pystack-dump serve\n\n"
	    "/debug/pprof/profile?seconds=N[&mode=wall|cpu|gil|async|greenlet|"
	    "exception]\n"
	    "    a profile for N seconds (default %.0f, at most %d) at %g Hz, "
	    "gzipped pprof\n"
	    "/debug/pprof/stacks[?json=1]\n"
	    "    every thread's stack now, text or JSON\n\n",
	    DEFAULT_SECONDS, MAX_SECONDS, s->cfg->opt.rate);
	list_processes(s->cfg, &b);
	return answer(c, q, MHD_HTTP_OK, text_type, &b);
}

/* ---- requests ---- */

static enum MHD_Result add_arg(void *ctx, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
	struct request *q = ctx;
	size_t len = strlen(q->line);
	(void)kind;
	snprintf(q->line + len, sizeof q->line - len, "%c%s%s%s",
	         strchr(q->line, '?') ? '&' : '?', key, value ? "=" : "",
	         value ? value : "");
	return MHD_YES;
}

static struct request *begin(struct server *s, struct MHD_Connection *c,
                             const char *method, const char *url)
{
	struct request *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->start = now_ns();
	snprintf(q->line, sizeof q->line, "%s %s", method, url);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, q);
	/* The client's bytes, decoded: one line of the log, escaped. */
	char raw[sizeof q->line];
	memcpy(raw, q->line, sizeof raw);
	pyd_one_line(raw, q->line, sizeof q->line);
	atomic_fetch_add(&s->inflight, 1);
	return q;
}

static enum MHD_Result route(struct server *s, struct MHD_Connection *c,
                             struct request *q, const char *method,
                             const char *url)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return answer_text(c, q, MHD_HTTP_METHOD_NOT_ALLOWED,
		                   "only GET is served");
	if (!strcmp(url, "/debug/pprof/profile"))
		return profile(s, c, q);
	if (!strcmp(url, "/debug/pprof/stacks"))
		return stacks(s, c, q);
	if (!strcmp(url, "/") || !strcmp(url, "/debug/pprof/"))
		return index_page(s, c, q);
	return answer_text(c, q, MHD_HTTP_NOT_FOUND,
	                   "not found: / lists what is served");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
	struct server *s = cls;
	(void)version;
	(void)upload;
	if (!*req_cls) {
		/* The headers are in; a body, if any, is not yet: answer
		 * on the next call, when MHD has it. */
		*req_cls = begin(s, c, method, url);
		return *req_cls ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		*upload_size = 0; /* a body is read and dropped */
		return MHD_YES;
	}
	return route(s, c, *req_cls, method, url);
}

/* The request's end: its line in the log. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct request *q = *req_cls;
	(void)c;
	if (!q)
		return;
	if (!s->cfg->opt.quiet)
		fprintf(stderr, PROG ": %s %u %zu B %.0f ms%s\n", q->line,
		        q->status, q->bytes, (double)(now_ns() - q->start) / 1e6,
		        toe == MHD_REQUEST_TERMINATED_COMPLETED_OK
		            ? ""
		            : " (not delivered: the client hung up)");
	free(q);
	*req_cls = NULL;
	atomic_fetch_sub(&s->inflight, 1);
}

/* ---- listening ---- */

/* ADDR:PORT ([IPV6]:PORT) split into host and port; false if it is not
 * that. */
static bool split_listen(const char *spec, char *host, size_t hostsz,
                         const char **port)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || !colon[1] || colon == spec)
		return false;
	size_t len = (size_t)(colon - spec);
	if (spec[0] == '[' && len >= 2 && spec[len - 1] == ']')
		spec++, len -= 2;
	if (len >= hostsz)
		return false;
	memcpy(host, spec, len);
	host[len] = 0;
	*port = colon + 1;
	return strspn(*port, "0123456789") == strlen(*port);
}

static int cannot_listen(const char *spec, enum pyd_err err, const char *why)
{
	cli_say_about(PROG, PYD_SAY_CANNOT_LISTEN, err, spec, why);
	return err;
}

/* A socket listening where spec says, in *fd; else the exit status. */
static int listen_on(const char *spec, int *fd)
{
	char host[256];
	const char *port;
	if (!split_listen(spec, host, sizeof host, &port))
		return cannot_listen(spec, PYD_E_USAGE,
		                     "not ADDR:PORT (e.g. 127.0.0.1:6060)");
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc)
		return cannot_listen(spec, PYD_E_USAGE, gai_strerror(rc));
	*fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (*fd >= 0)
		setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	bool ok = *fd >= 0 && !bind(*fd, ai->ai_addr, ai->ai_addrlen) &&
	          !listen(*fd, 64);
	int e = errno;
	freeaddrinfo(ai);
	if (ok)
		return 0;
	if (*fd >= 0)
		close(*fd);
	return cannot_listen(spec, e == EACCES ? PYD_E_PERM : PYD_E_USAGE,
	                     strerror(e));
}

/* "listening on http://ADDR:PORT/": the port bound, for port 0. */
static void say_listening(int fd, const struct serve_config *cfg)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof sa;
	char host[128] = "?", port[16] = "?";
	if (!getsockname(fd, (struct sockaddr *)&sa, &len))
		getnameinfo((struct sockaddr *)&sa, len, host, sizeof host, port,
		            sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
	bool v6 = sa.ss_family == AF_INET6;
	fprintf(stderr, PROG ": listening on http://%s%s%s:%s/ (%s)\n",
	        v6 ? "[" : "", host, v6 ? "]" : "", port,
	        cfg->opt.all ? "every CPython process" : "the PIDs given");
}

/* Stop: no new connections, the requests in progress answered (their
 * profiles end now), for at most DRAIN_NS. */
static void drain(struct server *s, struct MHD_Daemon *d)
{
	atomic_store(&s->stopping, true);
	int fd = (int)MHD_quiesce_daemon(d);
	if (fd >= 0)
		close(fd);
	for (int64_t end = now_ns() + DRAIN_NS;
	     atomic_load(&s->inflight) && now_ns() < end;)
		usleep(10000);
	MHD_stop_daemon(d);
}

int serve_run(const struct serve_config *cfg, char **argv)
{
	(void)argv; /* this is the server: nothing to run */
	int fd;
	int rc = listen_on(cfg->listen, &fd);
	if (rc)
		return rc;
	/* SIGINT and SIGTERM come to sigwait below, not to a connection's
	 * thread: every thread started after this inherits the mask. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct server s = {.cfg = cfg};
	struct MHD_Daemon *d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	        MHD_USE_ITC,
	    0, NULL, NULL, on_request, &s, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQUEST_MEMORY,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s, MHD_OPTION_END);
	if (!d) {
		close(fd);
		return cannot_listen(cfg->listen, PYD_E_NOMEM,
		                     "libmicrohttpd did not start");
	}
	say_listening(fd, cfg);
	int sig;
	while (sigwait(&stop, &sig))
		;
	if (!cfg->opt.quiet)
		fprintf(stderr, PROG ": %s: stopping\n", strsignal(sig));
	drain(&s, d);
	return 0;
}
