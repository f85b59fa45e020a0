/*
 * Error values shared by every layer.  Each one maps to a distinct exit code
 * in the CLI, so a script can tell "no such process" from "not Python".
 */
#ifndef PYD_ERROR_H
#define PYD_ERROR_H

enum pyd_err {
	PYD_OK = 0,
	PYD_E_USAGE = 2,       /* bad command line */
	PYD_E_NOPROC = 3,      /* no such process */
	PYD_E_PERM = 4,        /* not allowed to read the process */
	PYD_E_NOTPYTHON = 5,   /* no CPython runtime found in the target */
	PYD_E_UNSUPPORTED = 6, /* a CPython we have no layout for */
	PYD_E_EXITED = 7,      /* the process went away during the read */
	PYD_E_TORN = 8,        /* the stacks kept changing under us */
	PYD_E_READ = 9,        /* memory unreadable or not what we expected */
	PYD_E_NOMEM = 10,
	PYD_E_NOTCORE = 11,   /* not an ELF core file */
	PYD_E_FOREIGN = 12,   /* a core of another architecture */
	PYD_E_TRUNCATED = 13, /* the core ends before its segments do */
	PYD_E_SNAPSHOT = 14,  /* bad or unsupported snapshot file */
	PYD_E_EXEMISMATCH = 15, /* --exe is not the core's executable */
	PYD_E_PROFILE = 16,     /* bad or unsupported profile or recording
	                         * file (diff, report) */
	PYD_E_WRITE = 17,       /* an output file (-o, --save-snapshot)
	                         * cannot be written */
	PYD_E_NOCOREDUMP = 18,  /* --coredump: no kept core matches */
};

/* A short human name for an error ("no such process", ...). */
const char *pyd_strerror(enum pyd_err err);

#endif
