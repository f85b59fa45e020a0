/*
 * The pprof report of a small profile, read back: gunzip, then walk the
 * protobuf.  test_pprof [FILE] also keeps the profile in FILE, for
 * tests/check_pprof.py to give to the real pprof.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../core/report/profiles.h"
#include "../../core/report/report.h"
#include "check.h"

/* A protobuf message being read; bad input ends it (p = end, bad set). */
struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t varint(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; r->p < r->end && shift < 64; shift += 7) {
		uint8_t c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = 1;
	r->p = r->end;
	return 0;
}

/* The next field: its number, and its value or (length-delimited) body. */
static int field(struct rd *r, uint64_t *v, struct rd *body)
{
	if (r->p >= r->end)
		return 0;
	uint64_t key = varint(r);
	if ((key & 7) == 0) {
		*v = varint(r);
	} else if ((key & 7) == 2) {
		uint64_t n = varint(r);
		if (n > (uint64_t)(r->end - r->p)) {
			r->bad = 1;
			return 0;
		}
		*body = (struct rd){r->p, r->p + n, 0};
		r->p += n;
	} else {
		r->bad = 1;
		return 0;
	}
	return (int)(key >> 3);
}

#define MAXSTR 64

struct decoded {
	char *strs[MAXSTR];
	size_t nstrs, nsample_types, nsamples, nlocations, nfunctions;
	size_t nmappings, nlabels, bad_values, bad_locations;
	uint64_t count_sum, time_sum, awaiting_sum, period;
	uint64_t func_names[MAXSTR]; /* by function id - 1 */
	uint64_t state_key, awaiting;
	int bad;
};

/* key and str of a Label */
static void read_label(struct rd *m, uint64_t *key, uint64_t *str)
{
	struct rd body;
	uint64_t v;
	int f;
	while ((f = field(m, &v, &body))) {
		if (f == 1)
			*key = v;
		else if (f == 2)
			*str = v;
	}
}

static void read_sample(struct decoded *d, struct rd *m)
{
	struct rd body;
	uint64_t v, count = 0, key, state = 0;
	int f;
	while ((f = field(m, &v, &body))) {
		if (f == 1) {
			while (body.p < body.end)
				d->bad_locations += varint(&body) == 0;
		} else if (f == 2) {
			count = varint(&body);
			d->count_sum += count;
			d->time_sum += varint(&body);
			d->bad_values += body.p != body.end || body.bad;
		} else if (f == 3) {
			uint64_t str = 0;
			key = 0;
			read_label(&body, &key, &str);
			if (key == d->state_key)
				state = str;
			d->nlabels++;
		}
	}
	if (state == d->awaiting)
		d->awaiting_sum += count;
	d->nsamples++;
}

static void read_function(struct decoded *d, struct rd *m)
{
	struct rd body;
	uint64_t v, id = 0, name = 0;
	int f;
	while ((f = field(m, &v, &body))) {
		if (f == 1)
			id = v;
		else if (f == 2)
			name = v;
	}
	if (id >= 1 && id <= MAXSTR)
		d->func_names[id - 1] = name;
	d->nfunctions++;
}

static uint64_t string_index(const struct decoded *d, const char *s)
{
	for (size_t i = 0; i < d->nstrs; i++)
		if (strcmp(d->strs[i], s) == 0)
			return i;
	return UINT64_MAX;
}

/* The string table first: labels are recognized by their strings. */
static void read_strings(struct decoded *d, const uint8_t *buf, size_t n)
{
	struct rd r = {buf, buf + n, 0}, body;
	uint64_t v;
	int f;
	while ((f = field(&r, &v, &body)))
		if (f == 6 && d->nstrs < MAXSTR)
			d->strs[d->nstrs++] = strndup(
			    (const char *)body.p, (size_t)(body.end - body.p));
	d->bad |= r.bad;
	d->state_key = string_index(d, "state");
	d->awaiting = string_index(d, "awaiting");
}

static void read_profile(struct decoded *d, const uint8_t *buf, size_t n)
{
	struct rd r = {buf, buf + n, 0}, body;
	uint64_t v;
	int f;
	memset(d, 0, sizeof *d);
	read_strings(d, buf, n);
	while ((f = field(&r, &v, &body))) {
		if (f == 1)
			d->nsample_types++;
		else if (f == 2)
			read_sample(d, &body);
		else if (f == 3)
			d->nmappings++;
		else if (f == 4)
			d->nlocations++;
		else if (f == 5)
			read_function(d, &body);
		else if (f == 12)
			d->period = v;
	}
	d->bad |= r.bad;
}

static const char *str(const struct decoded *d, uint64_t i)
{
	return i < d->nstrs ? d->strs[i] : "?";
}

static int has_function(const struct decoded *d, const char *name)
{
	for (size_t i = 0; i < d->nfunctions && i < MAXSTR; i++)
		if (strcmp(str(d, d->func_names[i]), name) == 0)
			return 1;
	return 0;
}

static int has_string(const struct decoded *d, const char *s)
{
	for (size_t i = 0; i < d->nstrs; i++)
		if (strcmp(d->strs[i], s) == 0)
			return 1;
	return 0;
}

static size_t gunzip(const struct pyd_buf *b, uint8_t *out, size_t cap)
{
	z_stream zs = {0};
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)b->data;
	zs.avail_in = (uInt)b->len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	int rc = inflate(&zs, Z_FINISH);
	size_t n = cap - zs.avail_out;
	inflateEnd(&zs);
	return rc == Z_STREAM_END ? n : 0;
}

static void add(struct pyd_profile *p, int64_t tid, const char *name,
                const struct pyd_frame *frames, size_t n, int times,
                bool awaiting)
{
	for (int i = 0; i < times; i++)
		CHECK_EQ(pyd_profile_add(p, 0, tid, name, frames, n, awaiting),
		         PYD_OK);
}

/*
 * Main: f at two lines under <module> (one function, two locations);
 * a worker thread running a task that awaits in g.
 */
static struct pyd_profile *build(void)
{
	static const struct pyd_frame f20[] = {
	    FRAME("f", "f", "/app/m.py", 20, 19),
	    FRAME("<module>", "<module>", "/app/m.py", 3, 1)};
	static const struct pyd_frame f21[] = {
	    FRAME("f", "f", "/app/m.py", 21, 19),
	    FRAME("<module>", "<module>", "/app/m.py", 3, 1)};
	static const struct pyd_frame task[] = {FRAME("g", "C.g", "/app/g.py", 5, 4),
	                                        FRAME("Task-1", NULL, NULL, -1, 0),
	                                        FRAME("run", "run", "/app/g.py", 9, 8)};
	struct pyd_profile *p = pyd_profile_new(true, 0);
	if (!p || pyd_profile_process(p, 4242, 1, "python3 m.py", "3.12.1"))
		return NULL;
	add(p, 100, "MainThread", f20, 2, 3, false);
	add(p, 100, "MainThread", f21, 2, 2, false);
	add(p, 101, "worker", task, 3, 4, true);
	add(p, 101, "worker", task, 3, 1, false);
	add(p, 101, "worker", task, 0, 1, false); /* no Python frame */
	pyd_profile_finish(p);
	p->meta.mode = PYD_SAMPLE_ASYNC;
	p->meta.interval_s = 0.01;
	p->meta.duration_s = 0.11;
	p->meta.start_unix_us = 1700000000000000u;
	return p;
}

static void check_profile(const struct decoded *d)
{
	CHECK_EQ(d->bad, 0);
	CHECK_EQ(strcmp(str(d, 0), ""), 0);
	CHECK_EQ(d->nsample_types, 2);
	CHECK_EQ(d->nmappings, 1);
	CHECK_EQ(d->bad_values, 0);
	CHECK_EQ(d->bad_locations, 0);
	/* f:20, f:21, <module>:3, g:5, Task-1, run:9 */
	CHECK_EQ(d->nlocations, 6);
	CHECK_EQ(d->nfunctions, 5);
	CHECK_EQ(has_function(d, "f"), 1);
	CHECK_EQ(has_function(d, "<module>"), 1);
	CHECK_EQ(has_function(d, "C.g"), 1);
	CHECK_EQ(has_function(d, "<task Task-1>"), 1);
	/* 10 of 11: the sample without frames is left out */
	CHECK_EQ(d->count_sum, 10);
	CHECK_EQ(d->time_sum, 10 * 10000000u);
	CHECK_EQ(d->period, 10000000u);
	/* f:20, f:21, g running, g awaiting */
	CHECK_EQ(d->nsamples, 4);
	/* thread, thread id, state on each; task on the two in Task-1 */
	CHECK_EQ(d->nlabels, 4 * 3 + 2);
	CHECK_EQ(has_string(d, "task") && has_string(d, "Task-1"), 1);
	CHECK_EQ(d->state_key != UINT64_MAX && d->awaiting != UINT64_MAX, 1);
	CHECK_EQ(d->awaiting_sum, 4);
}

int main(int argc, char **argv)
{
	static uint8_t raw[1 << 16];
	struct pyd_buf b = {0};
	struct decoded d;
	struct pyd_profile *p = build();
	CHECK_EQ(p != NULL, 1);
	if (!p)
		return check_done("test_pprof");
	pyd_report_prof_pprof(&b, p, 0);
	CHECK_EQ(b.failed, 0);
	if (argc > 1)
		check_save(NULL, argv[1], b.data, b.len);
	size_t n = gunzip(&b, raw, sizeof raw);
	CHECK_EQ(n > 0, 1);
	read_profile(&d, raw, n);
	check_profile(&d);
	for (size_t i = 0; i < d.nstrs; i++)
		free(d.strs[i]);
	pyd_buf_free(&b);
	/* Kept apart by process: every sample also says its process. */
	p->by_process = true;
	pyd_report_prof_pprof(&b, p, 0);
	n = gunzip(&b, raw, sizeof raw);
	read_profile(&d, raw, n);
	CHECK_EQ(d.nlabels, 4 * 5 + 2);
	CHECK_EQ(has_string(&d, "process 4242 (python3 m.py)"), 1);
	for (size_t i = 0; i < d.nstrs; i++)
		free(d.strs[i]);
	pyd_buf_free(&b);
	pyd_profile_free(p);
	return check_done("test_pprof");
}
