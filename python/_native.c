/*
 * pystack_dump._native: the Python API's C half, on the same front end
 * as the CLI.  The package's Python half (pystack_dump/__init__.py) turns
 * its keyword arguments into the CLI's options, which are parsed and
 * checked here by the front end's one table (frontend/options.c), so a
 * bad value is refused in the CLI's words; errors are raised through the
 * factory the Python half registers, which maps exit codes to classes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "../core/pyd_stream.h"
#include "../frontend/dump.h"
#include "../frontend/procset.h"
#include "../frontend/render.h"

#define PROG "pystack_dump"

/* pystack_dump._error(code, message) -> the exception to raise. */
static PyObject *error_factory;

/* Raise the package's exception for code with message (the table's
 * words, without their last newline). */
static PyObject *raise_error(int code, const char *message, size_t len)
{
	while (len && message[len - 1] == '\n')
		len--;
	PyObject *exc = error_factory
	                    ? PyObject_CallFunction(error_factory, "is#", code,
	                                            message, (Py_ssize_t)len)
	                    : NULL;
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	} else if (!PyErr_Occurred()) {
		PyErr_SetString(PyExc_RuntimeError, "pystack_dump: no error "
		                                    "factory registered");
	}
	return NULL;
}

static PyObject *raise_msg(int code, const char *message)
{
	return raise_error(code, message, strlen(message));
}

static PyObject *raise_buf(int code, const struct pyd_buf *b)
{
	if (b->failed || !b->data)
		return raise_msg(PYD_E_NOMEM, PROG ": out of memory");
	return raise_error(code, b->data, b->len);
}

static PyObject *set_error_factory(PyObject *self, PyObject *f)
{
	(void)self;
	Py_INCREF(f);
	Py_XSETREF(error_factory, f);
	Py_RETURN_NONE;
}

/* The list of str args as an argv (argv[0] names the caller), parsed by
 * the front end's table for command in; false with the error raised.
 * The strings point into args, which the caller keeps. */
static bool parse_opts(const char *who, PyObject *args, unsigned in,
                       struct pyd_opts *o, char **argv, size_t max)
{
	Py_ssize_t n = PyList_Size(args);
	if (n < 0 || (size_t)n + 1 >= max) {
		PyErr_SetString(PyExc_TypeError, "options: a short list of str");
		return false;
	}
	argv[0] = (char *)who;
	for (Py_ssize_t i = 0; i < n; i++)
		if (!(argv[i + 1] = (char *)PyUnicode_AsUTF8(
		          PyList_GET_ITEM(args, i))))
			return false;
	argv[n + 1] = NULL;
	char err[512], msg[600];
	if (pyd_opts_getopt((int)n + 1, argv, in, o, err, sizeof err))
		return true;
	snprintf(msg, sizeof msg, "%s: %s", who, err);
	raise_msg(PYD_E_USAGE, msg);
	return false;
}

#define MAX_ARGS 32

/*
 * dump(options, pid) -> (report, code, message): options are the CLI's
 * (--json, --tasks, --core FILE ...), pid 0 for a file.  Raises where the
 * CLI prints no report; else code and message say how complete it is.
 */
static PyObject *dump(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *list;
	int pid;
	if (!PyArg_ParseTuple(args, "O!i", &PyList_Type, &list, &pid))
		return NULL;
	struct pyd_dump_job j = {.prog = PROG};
	char *argv[MAX_ARGS], err[256];
	if (!parse_opts(PROG ".dump", list, PYD_IN_DUMP, &j.opt, argv,
	                MAX_ARGS))
		return NULL;
	j.spec = (struct target_spec){.pid = pid,
	                              .core = j.opt.core,
	                              .snapshot = j.opt.snapshot,
	                              .record = j.opt.save != NULL};
	if (!pyd_dump_check(&j.spec, &j.opt, err, sizeof err))
		return raise_msg(PYD_E_USAGE, err);
	struct pyd_buf out = {0}, msg = {0};
	struct pyd_dump_outcome how;
	enum pyd_err code;
	/* Our own process is read as any other, through the live source;
	 * its Python threads stay still while this one keeps the GIL.  Any
	 * other target is read with the GIL released. */
	if (pid == getpid()) {
		code = pyd_dump_run(&j, &out, &msg, &how);
	} else {
		Py_BEGIN_ALLOW_THREADS
		code = pyd_dump_run(&j, &out, &msg, &how);
		Py_END_ALLOW_THREADS
	}
	PyObject *r = NULL;
	if (!how.shown || out.failed)
		raise_buf(out.failed ? PYD_E_NOMEM : (int)code, &msg);
	else
		r = Py_BuildValue("s#is#", out.data, (Py_ssize_t)out.len,
		                  (int)code, msg.data ? msg.data : "",
		                  (Py_ssize_t)msg.len);
	pyd_buf_free(&out);
	pyd_buf_free(&msg);
	return r;
}

/* ---- the sampler ---- */

typedef struct {
	PyObject_HEAD
	struct procset ps;
	struct pyd_profile *prof;
	struct pyd_opts opt; /* rate, mode */
	int pid;
	/* The target's root, held open for the heat map's source lines
	 * once it has exited (as pystack-dump sample does); -1 if not. */
	int root_fd;
	pthread_t thread;
	atomic_bool stop;
	bool opened, started, running;
	/* keep_samples: every sample as taken, a raw recording in memory
	 * (zstd, a few KB per 10,000 samples of a steady program), from
	 * which write() makes the streamed formats, raw and jsonl */
	struct pyd_stream *stream;
	struct pyd_buf rec;
	bool keep, rec_failed;
} Sampler;

static uint64_t unix_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

static bool stop_asked(void *ctx)
{
	Sampler *s = ctx;
	return atomic_load(&s->stop);
}

static enum pyd_err sampler_round(void *ctx, unsigned *nstacks)
{
	Sampler *s = ctx;
	return procset_round(&s->ps, nstacks);
}

/* The recording's records due, after every round. */
static void sampler_tick(void *ctx, const struct pyd_prof_meta *m)
{
	Sampler *s = ctx;
	(void)m;
	if (!pyd_stream_tick(s->stream))
		s->rec_failed = true;
}

/* A stream's sink into a buffer. */
static bool to_buf(void *ctx, const void *data, size_t n)
{
	struct pyd_buf *b = ctx;
	pyd_buf_put(b, data, n);
	return !b->failed;
}

/* The sampling thread: core's loop, never touching Python. */
static void *sample_thread(void *arg)
{
	Sampler *s = arg;
	struct pyd_sample_loop l = {.rate = s->opt.rate,
	                            .stop = stop_asked,
	                            .tick = s->stream ? sampler_tick : NULL,
	                            .round = sampler_round,
	                            .ctx = s};
	struct pyd_prof_meta *m = &s->prof->meta;
	m->start_unix_us = unix_us();
	pyd_sample_loop(NULL, &l, m);
	m->reads = procset_reads(&s->ps);
	m->interval_s = m->ticks ? m->duration_s / (double)m->ticks : 0;
	if (s->stream && !pyd_stream_close(s->stream))
		s->rec_failed = true;
	s->stream = NULL;
	return NULL;
}

/* Sampler(options, pid): options are pystack-dump sample's (--rate,
 * --mode). Opens the process at once, so a bad pid raises here. */
static int sampler_init(Sampler *s, PyObject *args, PyObject *kw)
{
	PyObject *list;
	if (kw && PyDict_Size(kw)) {
		PyErr_SetString(PyExc_TypeError, "Sampler: no keywords");
		return -1;
	}
	if (s->opened || s->prof) {
		PyErr_SetString(PyExc_RuntimeError, "Sampler: already set up");
		return -1;
	}
	int keep = 0;
	if (!PyArg_ParseTuple(args, "O!i|p", &PyList_Type, &list, &s->pid,
	                      &keep))
		return -1;
	s->keep = keep;
	char *argv[MAX_ARGS], detail[512] = "";
	if (!parse_opts(PROG ".Sampler", list, PYD_IN_SAMPLE, &s->opt, argv,
	                MAX_ARGS))
		return -1;
	if (!(s->prof = pyd_profile_new(true, 0))) {
		raise_msg(PYD_E_NOMEM, PROG ": out of memory");
		return -1;
	}
	enum pyd_err err;
	Py_BEGIN_ALLOW_THREADS
	err = procset_open(&s->ps, s->pid, s->prof, s->opt.mode, false, detail,
	                   sizeof detail);
	Py_END_ALLOW_THREADS
	s->opened = true;
	if (err) {
		struct target_spec spec = {.pid = s->pid};
		struct pyd_explain e = target_words(&spec, PROG ".Sampler",
		                                    detail);
		struct pyd_buf b = {0};
		pyd_explain(&b, &e, s->ps.mode_unsupported
		                        ? PYD_SAY_MODE_UNSUPPORTED
		                        : PYD_SAY_ERROR, err);
		raise_buf(err, &b);
		pyd_buf_free(&b);
		return -1;
	}
	char root[64];
	snprintf(root, sizeof root, "/proc/%d/root", s->pid);
	s->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct pyd_prof_meta *m = &s->prof->meta;
	m->pid = s->pid;
	m->python_version = s->prof->processes[0].python_version;
	m->mode = s->opt.mode;
	m->rate_hz = s->opt.rate;
	if (s->keep && pyd_stream_open(s->prof, pyd_prof_format_named("raw"),
	                               to_buf, &s->rec, &s->stream)) {
		raise_msg(PYD_E_NOMEM, PROG ": out of memory");
		return -1;
	}
	return 0;
}

static PyObject *sampler_start(Sampler *s, PyObject *unused)
{
	(void)unused;
	if (s->started)
		return raise_msg(PYD_E_USAGE,
		                 PROG ".Sampler: already started; a Sampler "
		                      "samples once (make a new one)");
	atomic_store(&s->stop, false);
	int rc = pthread_create(&s->thread, NULL, sample_thread, s);
	if (rc)
		return raise_msg(PYD_E_NOMEM, PROG ".Sampler: cannot start "
		                              "the sampling thread");
	s->started = s->running = true;
	Py_RETURN_NONE;
}

/* Join the thread (without the GIL: it may take a round). */
static void join(Sampler *s)
{
	if (!s->running)
		return;
	atomic_store(&s->stop, true);
	Py_BEGIN_ALLOW_THREADS
	pthread_join(s->thread, NULL);
	Py_END_ALLOW_THREADS
	s->running = false;
}

static PyObject *sampler_stop(Sampler *s, PyObject *unused)
{
	(void)unused;
	join(s);
	Py_RETURN_NONE;
}

/* The samples kept, as the streamed format f: the recording itself, or
 * replayed through f's writer (what pystack-dump report does). */
static PyObject *render_stream(Sampler *s, const struct pyd_prof_format *f)
{
	if (!s->keep)
		return raise_msg(PYD_E_USAGE,
		                 PROG ".Sampler: the streamed formats (raw, "
		                      "jsonl) need every sample: "
		                      "Sampler(..., keep_samples=True)");
	if (s->rec_failed || s->rec.failed)
		return raise_msg(PYD_E_NOMEM, PROG ": out of memory");
	if (!strcmp(f->name, "raw"))
		return PyBytes_FromStringAndSize(s->rec.data ? s->rec.data : "",
		                                 (Py_ssize_t)s->rec.len);
	struct pyd_buf b = {0};
	struct pyd_stream *st = NULL;
	struct pyd_replay r = {0};
	char detail[256];
	struct pyd_profile *p = pyd_profile_new(s->prof->lines, 0);
	enum pyd_err err = p ? pyd_stream_open(p, f, to_buf, &b, &st)
	                     : PYD_E_NOMEM;
	if (!err)
		err = pyd_replay(s->rec.data, s->rec.len, p, &r, detail,
		                 sizeof detail);
	if (st && !pyd_stream_close(st) && !err)
		err = PYD_E_NOMEM;
	pyd_profile_free(p);
	PyObject *out =
	    err ? raise_msg(err, PROG ".Sampler: cannot replay its samples")
	        : PyBytes_FromStringAndSize(b.data ? b.data : "",
	                                    (Py_ssize_t)b.len);
	pyd_buf_free(&b);
	return out;
}

/* render(options) -> bytes: the profile as pystack-dump sample writes it
 * with options (--format, --threads, --limit, --idle). */
static PyObject *sampler_render(Sampler *s, PyObject *args)
{
	PyObject *list;
	if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list))
		return NULL;
	if (s->running)
		return raise_msg(PYD_E_USAGE, PROG ".Sampler: still sampling; "
		                              "stop() it first");
	struct pyd_opts o;
	char *argv[MAX_ARGS], root[64] = "";
	if (!parse_opts(PROG ".Sampler", list, PYD_IN_SAMPLE, &o, argv,
	                MAX_ARGS))
		return NULL;
	/* --format, else the suffix of --output's name (the file the
	 * package then writes), else the call tree as JSON. */
	if (!o.format)
		o.format = o.output ? pyd_prof_format_for_file(o.output)
		                    : pyd_prof_format_named("json");
	if (o.format->stream)
		return render_stream(s, o.format);
	if (s->root_fd >= 0)
		snprintf(root, sizeof root, "/proc/self/fd/%d", s->root_fd);
	struct pyd_buf b = {0};
	enum pyd_err err = pyd_profile_render(&b, s->prof, &o, root);
	PyObject *r = err ? raise_msg(err, PROG ": out of memory")
	                  : PyBytes_FromStringAndSize(b.data ? b.data : "",
	                                              (Py_ssize_t)b.len);
	pyd_buf_free(&b);
	return r;
}

static PyObject *sampler_running(Sampler *s, void *unused)
{
	(void)unused;
	return PyBool_FromLong(s->running);
}

static PyObject *sampler_samples(Sampler *s, void *unused)
{
	(void)unused;
	/* Read while the thread may write it: a count, for display. */
	return PyLong_FromUnsignedLongLong(s->running ? 0
	                                              : s->prof->meta.samples);
}

static void sampler_dealloc(Sampler *s)
{
	join(s);
	if (s->stream) /* kept samples of a Sampler never started */
		pyd_stream_close(s->stream);
	if (s->opened)
		procset_close(&s->ps);
	pyd_profile_free(s->prof);
	pyd_buf_free(&s->rec);
	if (s->root_fd >= 0)
		close(s->root_fd);
	Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *sampler_new(PyTypeObject *t, PyObject *a, PyObject *k)
{
	(void)a;
	(void)k;
	Sampler *s = (Sampler *)t->tp_alloc(t, 0);
	if (s)
		s->root_fd = -1;
	return (PyObject *)s;
}

static PyMethodDef sampler_methods[] = {
    {"start", (PyCFunction)sampler_start, METH_NOARGS,
     "Start sampling in a native thread."},
    {"stop", (PyCFunction)sampler_stop, METH_NOARGS,
     "Stop sampling (no-op if not running)."},
    {"render", (PyCFunction)sampler_render, METH_VARARGS,
     "render(options) -> bytes: the profile as sample -f writes it."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef sampler_getset[] = {
    {"running", (getter)sampler_running, NULL, "Sampling now.", NULL},
    {"samples", (getter)sampler_samples, NULL,
     "Stacks recorded (0 while running).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SamplerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pystack_dump._native.Sampler",
    .tp_basicsize = sizeof(Sampler),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The sampler of one live process (see pystack_dump.Sampler).",
    .tp_new = sampler_new,
    .tp_init = (initproc)sampler_init,
    .tp_dealloc = (destructor)sampler_dealloc,
    .tp_methods = sampler_methods,
    .tp_getset = sampler_getset,
};

static PyMethodDef methods[] = {
    {"dump", dump, METH_VARARGS,
     "dump(options, pid) -> (report, code, message)"},
    {"set_error_factory", set_error_factory, METH_O,
     "set_error_factory(f): f(code, message) makes the exceptions raised."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pystack_dump._native",
    .m_doc = "pystack-dump's core, for the pystack_dump package.",
    .m_size = -1,
    .m_methods = methods,
};

/* ERRORS: every exit code's short name (pyd_strerror), for the package's
 * classes of exceptions. */
/* PyModule_AddObjectRef (3.10+) for Python 3.8 and 3.9 too: m gets a
 * reference of its own. */
static int add_ref(PyObject *m, const char *name, PyObject *obj)
{
	Py_INCREF(obj);
	if (PyModule_AddObject(m, name, obj) < 0) {
		Py_DECREF(obj);
		return -1;
	}
	return 0;
}

static int add_errors(PyObject *m)
{
	PyObject *d = PyDict_New();
	for (int code = PYD_E_USAGE; d && code <= PYD_E_PROFILE; code++) {
		PyObject *k = PyLong_FromLong(code);
		PyObject *v = PyUnicode_FromString(pyd_strerror(code));
		int bad = !k || !v || PyDict_SetItem(d, k, v) < 0;
		Py_XDECREF(k);
		Py_XDECREF(v);
		if (bad)
			Py_CLEAR(d);
	}
	int rc = d ? add_ref(m, "ERRORS", d) : -1;
	Py_XDECREF(d);
	return rc;
}

PyMODINIT_FUNC PyInit__native(void)
{
	if (PyType_Ready(&SamplerType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	if (add_ref(m, "Sampler", (PyObject *)&SamplerType) < 0 ||
	    add_errors(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
