/*
 * What the pystack-dump commands share: usage and error messages
 * (errors.c), and the subcommands main.c dispatches to.
 */
#ifndef PYD_CLI_H
#define PYD_CLI_H

#include "../core/pyd_error.h"
#include "../frontend/explain.h"
#include "../frontend/target.h"

/* "pystack-dump: " fmt (with arg), and where to get help, on stderr;
 * returns the usage exit code. */
int cli_usage_error(const char *fmt, const char *arg);
/* The pid in arg, or a usage error (returned; 0 on success). */
int cli_parse_pid(const char *arg, int *pid);
/* Explain err about the target spec names on stderr, its cause and its
 * fix; returns the exit code. */
int cli_report_error(enum pyd_err err, const struct target_spec *spec,
		     const char *detail);
/* The words for what the spec names, to fill in further (cli_say). */
struct pyd_explain cli_about(const struct target_spec *spec);
/* Say the message for (say, err) about e on stderr. */
void cli_say(const struct pyd_explain *e, enum pyd_say say, enum pyd_err err);
/* The same for program prog (e.g. "pystack-dump sample") about file (or
 * NULL), with detail. */
void cli_say_about(const char *prog, enum pyd_say say, enum pyd_err err,
		   const char *file, const char *detail);
/* An output file path (NULL: stdout, always fine) could not be written,
 * errno err: said for prog (what names a NULL path), PYD_E_WRITE
 * returned; a reader that went away (EPIPE) is no error: 0. */
int cli_cannot_write(const char *prog, const char *path, const char *what,
		     int err);
/* Can path be written?  Asked before a run that takes long, so that it
 * fails at once, not at its end; 0, or cli_cannot_write's status. */
int cli_output_check(const char *prog, const char *path);
/* len bytes of data as the whole of path (NULL: stdout); 0, or
 * cli_cannot_write's status. */
int cli_write_file(const char *prog, const char *path, const char *what,
		   const void *data, size_t len);
/* --debugger-setup: print the lines that load the plugins installed
 * with this executable; the exit status. */
int cli_debugger_setup(void);
/* pystack-dump sample ... (argv[0] is "sample") */
int sample_main(int argc, char **argv);
/* pystack-dump top ... (argv[0] is "top") */
int top_main(int argc, char **argv);
/* pystack-dump serve ... (argv[0] is "serve") */
int serve_main(int argc, char **argv);
/* pystack-dump diff ... (argv[0] is "diff") */
int diff_main(int argc, char **argv);
struct pyd_opts;
struct pyd_profile;
struct pyd_prof_format;
/* pystack-dump report ... (argv[0] is "report") */
int report_main(int argc, char **argv);
/* The -f lines of a help, from the table of formats: each summary line
 * in the third column, then the suffixes that pick it. */
void cli_format_help(void);
/* -f, else the output's name, else by where the output goes (a table
 * on a terminal, else collapsed). */
const struct pyd_prof_format *cli_format_for(const struct pyd_opts *o);
/* prof, finished, as o->format (o->threads, o->limit) into path (NULL:
 * stdout), source lines (the heat map's) read under directory root (NULL
 * or "": as named); the exit status, with prog's message if it failed. */
int cli_write_profile(const char *prog, struct pyd_profile *prof,
                      const struct pyd_opts *o, const char *path,
                      const char *root);
/* The top view of process pid with opt's rate, mode, duration and
 * subprocesses (top, sample --live); the exit status. */
int top_run(int pid, const struct pyd_opts *opt);

#endif
