/*
 * pystack-dump serve: its options and help, checked by pystack-dump (so
 * that its help and usage errors need no server) and by the server,
 * pystack-dump-serve (serve_main.c, serve_http.c: libmicrohttpd), which
 * pystack-dump runs (serve_exec.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../frontend/options.h"
#include "cli.h"
#include "serve.h"

static const char usage_text[] =
    "Usage: pystack-dump serve [OPTIONS] PID...\n"
    "       pystack-dump serve [OPTIONS] --all\n"
    "\n"
    "Serve profiles and stacks of the CPython processes PID... (or, with\n"
    "--all, of every CPython process this user may read, found as they\n"
    "start and end) over HTTP, at the paths Go's net/http/pprof made the\n"
    "convention, so that Parca, Grafana Alloy (pyroscope.scrape) or\n"
    "go tool pprof pull them. Nothing is written to a target.\n"
    "\n"
    "Options:\n"
    "      --listen ADDR:PORT  where to listen (default 127.0.0.1:6060);\n"
    "                      [::1]:PORT for IPv6, 0.0.0.0:PORT for every\n"
    "                      address (anyone who reaches it reads your\n"
    "                      processes' stacks). Port 0 picks a free one;\n"
    "                      the address bound is said on stderr\n"
    "      --all           every CPython process of the machine this\n"
    "                      user may read, instead of PIDs\n"
    "  -r, --rate HZ|max   samples per second of a profile (default 100,\n"
    "                      Go's rate)\n"
    "      --no-gc         no <GC> frame on threads collecting garbage\n"
    "  -q, --quiet         no line per request on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "Paths (GET only; any other method is answered 405):\n"
    "  /                   what is served and the processes selected\n"
    "  /debug/pprof/profile?seconds=N[&mode=MODE]\n"
    "                      a profile of the processes for N seconds\n"
    "                      (default 30, at most 300), gzipped pprof, each\n"
    "                      sample labelled with process, pid, thread, tid\n"
    "                      and (async, greenlet) task. MODE is wall\n"
    "                      (default), cpu, gil, async, greenlet or\n"
    "                      exception, as pystack-dump sample -m. A target\n"
    "                      that exits meanwhile: what was sampled before\n"
    "  /debug/pprof/stacks[?json=1]\n"
    "                      the stacks of every thread now, as\n"
    "                      pystack-dump --subprocesses prints them (text,\n"
    "                      or its JSON); the counterpart of Go's\n"
    "                      /debug/pprof/goroutine?debug=2\n"
    "\n"
    "Answers: 200; 400 a bad parameter (the body says which); 404 an\n"
    "unknown path, or no process selected could be read (403 not\n"
    "allowed, 422 not Python, 501 a mode or version not supported; the\n"
    "body says why); 405 not GET; 414 a URL over 16 KiB; 503 with\n"
    "Retry-After when 4 profiles already run. At most 64 connections at\n"
    "once (more are closed unanswered). A profile whose client hangs up\n"
    "stops sampling. SIGINT or SIGTERM: stop listening, answer the\n"
    "requests in progress (a profile with what it sampled), exit 0.\n"
    "\n"
    "Exit status: 0 stopped by a signal; 2 bad usage, or the address\n"
    "cannot be listened on (in use, not this machine's); 4 not allowed to\n"
    "listen there; 6 a build without serve (the static binary).\n"
    "\n"
    "Examples:\n"
    "  pystack-dump serve 1234 5678\n"
    "  go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=10'\n"
    "  pystack-dump serve --all --listen 0.0.0.0:6060\n";

static int bad_usage(const char *what)
{
	fprintf(stderr, "pystack-dump serve: %s\nTry 'pystack-dump serve "
	        "--help'.\n", what);
	return PYD_E_USAGE;
}

static int parse_pids(int argc, char **argv, struct serve_config *c)
{
	c->npids = (size_t)(argc - optind);
	c->pids = calloc(c->npids ? c->npids : 1, sizeof *c->pids);
	if (!c->pids)
		return PYD_E_NOMEM;
	for (size_t i = 0; i < c->npids; i++) {
		int rc = cli_parse_pid(argv[optind + (int)i], &c->pids[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_serve_args(int argc, char **argv, struct serve_config *c)
{
	char err[512];
	if (!pyd_opts_getopt(argc, argv, PYD_IN_SERVE, &c->opt, err,
	                     sizeof err))
		return bad_usage(err);
	if (c->opt.help) {
		fputs(usage_text, stdout);
		exit(0);
	}
	if (c->opt.all == (optind < argc))
		return bad_usage(c->opt.all ? "--all or PIDs, not both"
		                            : "give PIDs to serve, or --all");
	c->listen = c->opt.listen ? c->opt.listen : "127.0.0.1:6060";
	return parse_pids(argc, argv, c);
}

int serve_main(int argc, char **argv)
{
	struct serve_config c = {0};
	int rc = parse_serve_args(argc, argv, &c);
	if (!rc)
		rc = serve_run(&c, argv);
	free(c.pids);
	return rc;
}
