/*
 * sample --push (push.h): profiles to Pyroscope over HTTP(S) with
 * libcurl, from a sender thread and a queue of PUSH_QUEUE profiles.
 *
 * What Pyroscope's ingest API takes (its server API reference, and the
 * ingest handler it documents): POST /ingest with the profile's metadata
 * in the query -- name=APP{k=v,...} (URL-encoded), from and until in
 * Unix seconds, format=pprof, sampleRate in Hz, spyName -- and, for
 * format=pprof, the pprof (gzipped or not) as the raw body; 2xx is
 * accepted.  An application name takes letters, digits and _ . - /; a
 * label name letters, digits, _ and .; __name__ is reserved.
 */
#define _GNU_SOURCE
/* the functions, not the macros that check setopt's types: they are
 * called through the pointers below */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "push.h"

#define PROG "pystack-dump sample"

/*
 * libcurl is loaded when --push is given, not linked: the thirty-odd
 * libraries it needs in turn (TLS, HTTP/2, Kerberos, LDAP ...) would be
 * loaded by every one-shot dump as it starts (callgrind: pystack-dump
 * --version went from 1.0 M instructions to 16.4 M linked with it).
 */
#define CURL_FUNCS(X)                                                          \
	X(curl_global_init) X(curl_global_cleanup) X(curl_url)                 \
	X(curl_url_set) X(curl_url_get) X(curl_url_dup) X(curl_url_cleanup)    \
	X(curl_free) X(curl_easy_init) X(curl_easy_setopt)                     \
	X(curl_easy_perform) X(curl_easy_getinfo) X(curl_easy_cleanup)         \
	X(curl_easy_escape) X(curl_easy_strerror) X(curl_slist_append)         \
	X(curl_slist_free_all)
#define CURL_FIELD(f) __typeof__(f) *f;
static struct {
	CURL_FUNCS(CURL_FIELD)
} lib;

/* The library Debian's libcurl4 installs (the -dev package's libcurl.so
 * names it), and each function above from it. */
static bool load_curl(char *err, size_t errsz)
{
	if (lib.curl_global_init)
		return true;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errsz, "libcurl could not be loaded (%s): install "
		                     "it (Debian: apt-get install libcurl4)",
		         dlerror());
		return false;
	}
	__typeof__(lib) l;
#define CURL_LOAD(f)                                                           \
	if (!(*(void **)&l.f = dlsym(h, #f))) {                                \
		snprintf(err, errsz, "the libcurl found has no %s: it is older "  \
		                     "than 7.80", #f);                          \
		return false;                                                  \
	}
	CURL_FUNCS(CURL_LOAD)
	lib = l;
	return true;
}
#define REQUEST_TIMEOUT_S 10L
#define CONNECT_TIMEOUT_S 5L

struct item {
	char *data;
	size_t len;
	uint64_t from_s, until_s;
	unsigned rate_hz;
};

struct push {
	CURLU *base;        /* the URL given, its path ending in /ingest */
	char shown[1024];   /* ... without user:password, for messages */
	const char *app;    /* --app, or NULL */
	const char *labels; /* --labels, or NULL */
	char name[1280];    /* APP{labels}, the name parameter (a process's
	                     * name is cut at 255) */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* what the lock guards: the queue, the end, the counts, what was
	 * said */
	struct item queue[PUSH_QUEUE];
	size_t head, n;
	bool stopping;
	struct timespec deadline; /* the flush's end, once stopping */
	struct push_counts counts;
	bool said_failing, said_rejected, said_dropped;
	/* the sender thread's own */
	CURL *curl;
	char reply[256]; /* the start of the server's reply */
	size_t reply_len;
};

/* ---- checking the options ---- */

static bool app_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
	       c == '/';
}

static bool label_name_char(char c)
{
	return app_char(c) && c != '-' && c != '/';
}

/* A value ends at ',' or '}' in Pyroscope's parser and is trimmed. */
static bool label_value_char(char c)
{
	return c > ' ' && c < 0x7f && !strchr(",{}=\"", c);
}

/* A usage error naming the option and the bad part of its value. */
static int bad(char *err, size_t errsz, const char *opt, const char *what,
               size_t len, const char *why)
{
	snprintf(err, errsz, "%s '%.*s': %s", opt, (int)len, what, why);
	return PYD_E_USAGE;
}

static int check_app(const char *app, char *err, size_t errsz)
{
	size_t n = strlen(app);
	for (size_t i = 0; i < n; i++)
		if (!app_char(app[i]))
			return bad(err, errsz, "--app", app, n,
			           "Pyroscope's application names take letters, "
			           "digits and _ . - /");
	return n ? 0 : bad(err, errsz, "--app", app, n, "an empty name");
}

/* One k=v of --labels, len bytes at s. */
static int check_label(const char *s, size_t len, char *err, size_t errsz)
{
	const char *eq = memchr(s, '=', len);
	if (!eq || eq == s || eq + 1 == s + len)
		return bad(err, errsz, "--labels", s, len,
		           "not k=v (give k=v,k2=v2)");
	size_t klen = (size_t)(eq - s);
	if (klen == 8 && !memcmp(s, "__name__", 8))
		return bad(err, errsz, "--labels", s, len,
		           "__name__ is Pyroscope's own (use --app)");
	for (const char *c = s; c < eq; c++)
		if (!label_name_char(*c))
			return bad(err, errsz, "--labels", s, len,
			           "a label's name takes letters, digits, _ "
			           "and . (Pyroscope's rule)");
	for (const char *c = eq + 1; c < s + len; c++)
		if (!label_value_char(*c))
			return bad(err, errsz, "--labels", s, len,
			           "a label's value takes printable characters "
			           "but blanks and , { } = \"");
	return 0;
}

static int check_labels(const char *labels, char *err, size_t errsz)
{
	for (const char *s = labels;; s++) {
		size_t len = strcspn(s, ",");
		int rc = check_label(s, len, err, errsz);
		if (rc || !s[len])
			return rc;
		s += len;
	}
}

/* The URL given, its path ending in /ingest, and the same shown without
 * its credentials. */
static int check_url(struct push *p, const char *url, char *err,
                     size_t errsz)
{
	char *scheme = NULL, *path = NULL, *query = NULL, *shown = NULL;
	int rc = PYD_E_USAGE;
	p->base = lib.curl_url();
	if (!p->base)
		return PYD_E_NOMEM;
	if (lib.curl_url_set(p->base, CURLUPART_URL, url, 0) ||
	    lib.curl_url_get(p->base, CURLUPART_SCHEME, &scheme, 0) ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
		snprintf(err, errsz, "--push wants an http:// or https:// URL "
		                     "(the Pyroscope server), not '%s'", url);
		goto out;
	}
	lib.curl_url_get(p->base, CURLUPART_QUERY, &query, 0);
	if (query) {
		snprintf(err, errsz, "--push URL: no query (?%s): the "
		                     "profile's parameters are added to it",
		         query);
		goto out;
	}
	lib.curl_url_get(p->base, CURLUPART_PATH, &path, 0);
	char full[2048];
	size_t n = path ? strlen(path) : 0;
	bool has = n >= 7 && !strcmp(path + n - 7, "/ingest");
	snprintf(full, sizeof full, "%s%s%s", path ? path : "",
	         has ? "" : n && path[n - 1] == '/' ? "" : "/",
	         has ? "" : "ingest");
	CURLU *copy = NULL;
	if (lib.curl_url_set(p->base, CURLUPART_PATH, full, 0) ||
	    !(copy = lib.curl_url_dup(p->base)) ||
	    lib.curl_url_set(copy, CURLUPART_USER, NULL, 0) ||
	    lib.curl_url_set(copy, CURLUPART_PASSWORD, NULL, 0) ||
	    lib.curl_url_get(copy, CURLUPART_URL, &shown, 0)) {
		rc = PYD_E_NOMEM;
	} else {
		snprintf(p->shown, sizeof p->shown, "%s", shown);
		rc = 0;
	}
	lib.curl_url_cleanup(copy);
out:
	lib.curl_free(scheme);
	lib.curl_free(path);
	lib.curl_free(query);
	lib.curl_free(shown);
	return rc;
}

/* What of --app and --labels fits struct push's name. */
#define APP_MAX 200
#define LABELS_MAX 768
#define STR_(n) #n
#define STR(n) STR_(n)

int push_open(struct push **out, const char *url, const char *app,
              const char *labels, char *err, size_t errsz)
{
	*out = NULL;
	int rc = app ? check_app(app, err, errsz) : 0;
	if (!rc && labels)
		rc = check_labels(labels, err, errsz);
	if (!rc && labels && strlen(labels) > LABELS_MAX)
		rc = bad(err, errsz, "--labels", labels, 20,
		         "too long (" STR(LABELS_MAX) " characters at most)");
	if (!rc && app && strlen(app) > APP_MAX)
		rc = bad(err, errsz, "--app", app, 20,
		         "too long (" STR(APP_MAX) " characters at most)");
	if (rc)
		return rc;
	if (!load_curl(err, errsz))
		return PYD_E_UNSUPPORTED;
	struct push *p = calloc(1, sizeof *p);
	if (!p || lib.curl_global_init(CURL_GLOBAL_DEFAULT)) {
		free(p);
		return PYD_E_NOMEM;
	}
	p->app = app;
	p->labels = labels;
	if ((rc = check_url(p, url, err, errsz))) {
		lib.curl_url_cleanup(p->base);
		free(p);
		lib.curl_global_cleanup();
		return rc;
	}
	*out = p;
	return 0;
}

const char *push_shown_url(const struct push *p)
{
	return p->shown;
}

/* ---- saying what happened: once each ---- */

static void say(const struct push *p, enum pyd_say what,
                unsigned long long count, const char *detail)
{
	struct pyd_explain e = {.prog = PROG,
	                        .shell = PYD_SHELL_CLI,
	                        .file = p->shown,
	                        .count = count,
	                        .detail = detail};
	cli_say(&e, what, PYD_E_READ);
}

static void say_once(struct push *p, bool *said, enum pyd_say what,
                     unsigned long long count, const char *detail)
{
	if (!*said)
		say(p, what, count, detail);
	*said = true;
}

/* ---- the queue (under the lock) ---- */

static struct item *at(struct push *p, size_t i)
{
	return &p->queue[(p->head + i) % PUSH_QUEUE];
}

/* Make room for one more: the oldest goes. */
static void drop_oldest(struct push *p)
{
	if (p->n < PUSH_QUEUE)
		return;
	free(at(p, 0)->data);
	p->head = (p->head + 1) % PUSH_QUEUE;
	p->n--;
	p->counts.dropped++;
	say_once(p, &p->said_dropped, PYD_SAY_PUSH_DROPPED, PUSH_QUEUE, NULL);
}

void push_send(struct push *p, struct pyd_buf *body, uint64_t from_us,
               uint64_t until_us, unsigned rate_hz)
{
	/* whole seconds, rounded alike, so one interval's until is the
	 * next one's from */
	uint64_t from = (from_us + 500000) / 1000000;
	uint64_t until = (until_us + 500000) / 1000000;
	struct item it = {body->data, body->len, from,
	                  until > from ? until : from + 1, rate_hz};
	*body = (struct pyd_buf){0};
	pthread_mutex_lock(&p->lock);
	drop_oldest(p);
	*at(p, p->n++) = it;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

/* ---- one request ---- */

enum outcome { SENT, RETRY, REJECTED };

static size_t keep_reply(char *data, size_t size, size_t n, void *ctx)
{
	struct push *p = ctx;
	size_t len = size * n, room = sizeof p->reply - 1 - p->reply_len;
	size_t take = len < room ? len : room;
	memcpy(p->reply + p->reply_len, data, take);
	p->reply_len += take;
	p->reply[p->reply_len] = 0;
	return len;
}

/* The query: the profile's metadata, as the ingest API names it. */
static bool query(struct push *p, const struct item *it, char *out,
                  size_t size)
{
	char *name = lib.curl_easy_escape(p->curl, p->name, 0);
	if (!name)
		return false;
	int n = snprintf(out, size,
	                 "name=%s&from=%llu&until=%llu&format=pprof"
	                 "&sampleRate=%u&spyName=pystack-dump",
	                 name, (unsigned long long)it->from_s,
	                 (unsigned long long)it->until_s, it->rate_hz);
	lib.curl_free(name);
	return n > 0 && (size_t)n < size;
}

/* What a status other than 2xx means, with the reply's first line. */
static enum outcome judge(struct push *p, long status, char *why,
                          size_t whysz)
{
	if (status >= 200 && status < 300)
		return SENT;
	size_t line = strcspn(p->reply, "\r\n");
	snprintf(why, whysz, "HTTP %ld%s%.*s", status, line ? ": " : "",
	         (int)(line > 200 ? 200 : line), p->reply);
	return status == 429 || status >= 500 ? RETRY : REJECTED;
}

static enum outcome post(struct push *p, const struct item *it, char *why,
                         size_t whysz)
{
	char q[3 * sizeof p->name + 256]; /* the name escaped, the rest */
	CURLU *u = lib.curl_url_dup(p->base);
	if (!u || !query(p, it, q, sizeof q) ||
	    lib.curl_url_set(u, CURLUPART_QUERY, q, 0)) {
		lib.curl_url_cleanup(u);
		snprintf(why, whysz, "out of memory");
		return RETRY;
	}
	struct curl_slist *h = lib.curl_slist_append(
	    NULL, "Content-Type: binary/octet-stream");
	/* no "Expect: 100-continue" round trip before the body */
	struct curl_slist *hh = h ? lib.curl_slist_append(h, "Expect:") : NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	p->reply_len = 0;
	p->reply[0] = 0;
	lib.curl_easy_setopt(p->curl, CURLOPT_CURLU, u);
	lib.curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, hh ? hh : h);
	lib.curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, it->data);
	lib.curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE,
	                 (curl_off_t)it->len);
	lib.curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode rc = lib.curl_easy_perform(p->curl);
	long status = 0;
	lib.curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	lib.curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, NULL);
	lib.curl_easy_setopt(p->curl, CURLOPT_CURLU, NULL);
	lib.curl_slist_free_all(hh ? hh : h);
	lib.curl_url_cleanup(u);
	if (rc == CURLE_OK)
		return judge(p, status, why, whysz);
	snprintf(why, whysz, "%s", *errbuf ? errbuf : lib.curl_easy_strerror(rc));
	return RETRY;
}

/* ---- the sender thread ---- */

static bool past(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > t->tv_sec ||
	       (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* The flush's time is up: a request under way is cut short. */
static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c,
                       curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	struct push *p = ctx;
	pthread_mutex_lock(&p->lock);
	bool cut = p->stopping && past(&p->deadline);
	pthread_mutex_unlock(&p->lock);
	return cut;
}

static struct timespec after(double seconds)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	double whole = floor(seconds);
	t.tv_sec += (time_t)whole;
	t.tv_nsec += (long)((seconds - whole) * 1e9);
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void setup_curl(struct push *p)
{
	lib.curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	lib.curl_easy_setopt(p->curl, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
	lib.curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	lib.curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "pystack-dump/" PYD_VERSION);
	lib.curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, keep_reply);
	lib.curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
	lib.curl_easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	lib.curl_easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	lib.curl_easy_setopt(p->curl, CURLOPT_XFERINFODATA, p);
}

/* After a send (under the lock): count it, say what needs saying, and
 * put back at the front one to try again, unless the queue is full. */
static void settle(struct push *p, struct item *it, enum outcome o,
                   const char *why)
{
	if (o == SENT)
		p->counts.sent++;
	if (o == REJECTED) {
		p->counts.rejected++;
		say_once(p, &p->said_rejected, PYD_SAY_PUSH_REJECTED, 0, why);
	}
	if (o != RETRY) {
		free(it->data);
		return;
	}
	p->counts.retried++;
	say_once(p, &p->said_failing, PYD_SAY_PUSH_FAILING,
	         PUSH_BACKOFF_MAX_S, why);
	if (p->n == PUSH_QUEUE) {
		free(it->data);
		p->counts.dropped++;
		say_once(p, &p->said_dropped, PYD_SAY_PUSH_DROPPED, PUSH_QUEUE,
		         NULL);
		return;
	}
	p->head = (p->head + PUSH_QUEUE - 1) % PUSH_QUEUE;
	p->n++;
	*at(p, 0) = *it;
}

/* Wait (under the lock) until t, or the flush's end if sooner, or a
 * wake-up. */
static void wait_until(struct push *p, struct timespec t)
{
	if (p->stopping && (t.tv_sec > p->deadline.tv_sec ||
	                    (t.tv_sec == p->deadline.tv_sec &&
	                     t.tv_nsec > p->deadline.tv_nsec)))
		t = p->deadline;
	pthread_cond_timedwait(&p->wake, &p->lock, &t);
}

static void *sender(void *ctx)
{
	struct push *p = ctx;
	double backoff = 0.5;
	struct timespec next_try = {0}; /* no send before: a retry's pause */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->stopping && (!p->n || past(&p->deadline)))
			break;
		if (p->n && !past(&next_try)) {
			wait_until(p, next_try);
			continue;
		}
		if (!p->n) {
			if (p->stopping)
				wait_until(p, p->deadline);
			else
				pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		struct item it = *at(p, 0);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		pthread_mutex_unlock(&p->lock);
		char why[512] = "";
		enum outcome o = post(p, &it, why, sizeof why);
		pthread_mutex_lock(&p->lock);
		settle(p, &it, o, why);
		if (o == RETRY) {
			next_try = after(backoff);
			backoff = backoff * 2 < PUSH_BACKOFF_MAX_S
			              ? backoff * 2 : PUSH_BACKOFF_MAX_S;
		} else {
			backoff = 0.5;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* APP{labels}: --app, else the process's name made one Pyroscope takes
 * (its first word's last part, e.g. python3.12). */
static void make_name(struct push *p, const char *process_name)
{
	char app[256];
	const char *src = p->app;
	if (!src) {
		size_t word = strcspn(process_name, " ");
		const char *base = process_name;
		for (const char *c = process_name; c < process_name + word; c++)
			if (*c == '/')
				base = c + 1;
		snprintf(app, sizeof app, "%.*s",
		         (int)(process_name + word - base), base);
		for (char *c = app; *c; c++)
			if (!app_char(*c))
				*c = '_';
		src = *app ? app : "python";
	}
	snprintf(p->name, sizeof p->name, "%s{%s}", src,
	         p->labels ? p->labels : "");
}

int push_start(struct push *p, const char *process_name)
{
	make_name(p, process_name ? process_name : "");
	p->curl = lib.curl_easy_init();
	if (!p->curl)
		return PYD_E_NOMEM;
	setup_curl(p);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	/* Ctrl-C and SIGTERM go to the sampling thread, which stops on
	 * them: the sender inherits a mask without them. */
	sigset_t stop, was;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, &was);
	int rc = pthread_create(&p->thread, NULL, sender, p);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc)
		return PYD_E_NOMEM;
	p->started = true;
	return 0;
}

struct push_counts push_close(struct push *p)
{
	struct push_counts c = {0};
	if (!p)
		return c;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		p->deadline = after(PUSH_FLUSH_S);
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
		for (size_t i = 0; i < p->n; i++)
			free(at(p, i)->data);
		p->counts.unsent = p->n;
		c = p->counts;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->wake);
	}
	if (p->curl)
		lib.curl_easy_cleanup(p->curl);
	lib.curl_url_cleanup(p->base);
	free(p);
	lib.curl_global_cleanup();
	return c;
}
