/*
 * The table of options (options.h) and the two ways of reading it: argv
 * through getopt_long for the CLI, blank-separated words for the
 * debuggers.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* What an option's value is; FLAG and ACTION take none. */
enum kind {
	FLAG,   /* sets its field */
	ACTION, /* sets its field and ends the CLI's parsing: -h, -V */
	STRING,
	OUTPUT,  /* a file to write; "-" is stdout (NULL) */
	RATE,    /* 'max' (0) or samples per second */
	SECONDS, /* > 0 */
	OFFSET,  /* seconds >= 0 */
	COUNT,   /* a whole number > 0 */
	LIMIT,   /* 0 or a count (fractions truncated) */
	SIZE,    /* a whole number 0..10000 (unsigned) */
	DEPTH,   /* a whole number 0..20 (unsigned) */
	MODE,    /* a sampling mode's name */
	FORMAT,  /* a profile format's name */
	DIFF_FORMAT, /* one of pystack-dump diff's formats */
};

/* In words: a bare word, not an option (py-sample's N). */
#define OPERAND ""

struct opt {
	const char *name;  /* --name; NULL: not in the CLI */
	char letter;       /* -letter; 0: none */
	const char *words; /* in the debuggers, blank-separated; NULL: none */
	enum kind kind;
	unsigned in; /* PYD_IN_* */
	size_t at;   /* its field in struct pyd_opts */
};

#define AT(field) offsetof(struct pyd_opts, field)
#define DUMP      PYD_IN_DUMP
#define SAMPLING  (PYD_IN_SAMPLE | PYD_IN_PYSAMPLE)
#define LIVE      (PYD_IN_SAMPLE | PYD_IN_TOP)
#define REPORTS   (PYD_IN_SAMPLE | PYD_IN_REPORT) /* write a profile */

/*
 * A new option is a row here and a field in struct pyd_opts, then the
 * help of each command it is in.  The order is getopt_long's (glibc lists
 * an ambiguous abbreviation's candidates in it) and, with the letters,
 * makes the short options' string.
 */
static const struct opt opts[] = {
    {"core", 0, NULL, STRING, DUMP, AT(core)},
    {"coredump", 0, NULL, STRING, DUMP, AT(coredump)},
    {"exe", 0, NULL, STRING, DUMP, AT(exe)},
    {"sysroot", 0, NULL, STRING, DUMP, AT(sysroot)},
    {"snapshot", 0, NULL, STRING, DUMP, AT(snapshot)},
    {"save-snapshot", 0, NULL, STRING, DUMP, AT(save)},
    {"json", 'j', "-j --json", FLAG, DUMP | PYD_IN_BT | PYD_IN_TASKS, AT(json)},
    {"locked", 'l', NULL, FLAG, DUMP, AT(locked)},
    {"no-source", 0, NULL, FLAG, DUMP, AT(no_source)},
    {"locals", 'L', "-l --locals full", FLAG, DUMP | PYD_IN_BT, AT(locals)},
    {"locals-string", 0, NULL, SIZE, DUMP, AT(repr.string)},
    {"locals-items", 0, NULL, SIZE, DUMP, AT(repr.items)},
    {"locals-depth", 0, NULL, DEPTH, DUMP, AT(repr.depth)},
    {"tasks", 0, NULL, FLAG, DUMP, AT(tasks)},
    {"greenlets", 0, NULL, FLAG, DUMP, AT(greenlets)},
    {"table", 0, "-t", FLAG, DUMP | PYD_IN_TASKS, AT(table)},
    {NULL, 0, "all", FLAG, PYD_IN_BT, AT(all)},
    {"native", 0, "-n", FLAG, DUMP | PYD_IN_BT, AT(native)},
    {"native-all", 0, "-N --native-all", FLAG, DUMP | PYD_IN_BT, AT(native_all)},
    {"subprocesses", 0, NULL, FLAG, DUMP | LIVE, AT(subprocesses)},
    {NULL, 0, OPERAND, COUNT, PYD_IN_MOVE, AT(levels)},
    {NULL, 0, OPERAND, STRING, PYD_IN_PRINT, AT(name)},
    {"all", 0, NULL, FLAG, PYD_IN_SERVE, AT(all)},
    {"listen", 0, NULL, STRING, PYD_IN_SERVE, AT(listen)},
    {"rate", 'r', "-r --rate", RATE, SAMPLING | PYD_IN_TOP | PYD_IN_SERVE,
     AT(rate)},
    {"duration", 'd', NULL, SECONDS, LIVE, AT(duration)},
    {"samples", 'n', OPERAND, COUNT, SAMPLING, AT(samples)},
    {"mode", 'm', "-m --mode", MODE, SAMPLING | PYD_IN_TOP, AT(mode)},
    {"format", 'f', "-f --format", FORMAT, SAMPLING | PYD_IN_REPORT,
     AT(format)},
    {"format", 'f', NULL, DIFF_FORMAT, PYD_IN_DIFF, AT(diff_format)},
    {"output", 'o', "-o --output", OUTPUT,
     SAMPLING | PYD_IN_DIFF | PYD_IN_REPORT, AT(output)},
    {"every", 0, NULL, SECONDS, PYD_IN_SAMPLE, AT(every)},
    {"push", 0, NULL, STRING, PYD_IN_SAMPLE, AT(push)},
    {"app", 0, NULL, STRING, PYD_IN_SAMPLE, AT(app)},
    {"labels", 0, NULL, STRING, PYD_IN_SAMPLE, AT(labels)},
    {"from", 0, NULL, OFFSET, PYD_IN_REPORT, AT(from)},
    {"to", 0, NULL, OFFSET, PYD_IN_REPORT, AT(to)},
    {"no-lines", 0, NULL, FLAG, REPORTS, AT(no_lines)},
    {"no-gc", 0, "--no-gc", FLAG, SAMPLING | PYD_IN_TOP | PYD_IN_SERVE,
     AT(no_gc)},
    {"idle", 0, NULL, FLAG, REPORTS, AT(idle)},
    {"threads", 0, NULL, FLAG, REPORTS, AT(threads)},
    {"limit", 0, NULL, LIMIT, REPORTS | PYD_IN_DIFF, AT(limit)},
    {"quiet", 'q', NULL, FLAG, REPORTS | PYD_IN_SERVE, AT(quiet)},
    {"live", 0, NULL, FLAG, PYD_IN_SAMPLE, AT(live)},
    {"help", 'h', NULL, ACTION,
     DUMP | LIVE | PYD_IN_DIFF | PYD_IN_REPORT | PYD_IN_SERVE, AT(help)},
    {"version", 'V', NULL, ACTION, DUMP, AT(version)},
    {"debugger-setup", 0, NULL, ACTION, DUMP, AT(debugger_setup)},
    {"list-formats", 0, NULL, ACTION, PYD_IN_SAMPLE, AT(list_formats)},
};

#define NOPTS (sizeof opts / sizeof *opts)

/* ---- values ---- */

/* Which shell reads a value: their limits and words differ. */
enum shell { CLI, DEBUGGER };

/* The debuggers always took rates and counts below 1e12 (the largest
 * double under it), the CLI rates up to 1e7 and counts up to 1e18. */
static const double max_rate[] = {1e7, 0x1.d1a94a1ffffffp+39};
static const double max_count[] = {1e18, 0x1.d1a94a1ffffffp+39};

/* A finite number > 0, all of s. */
static bool number(const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && !*end && isfinite(*v) && *v > 0;
}

/* Value s of kind k into *to, as shell sh takes it. */
static bool parse(enum kind k, const char *s, enum shell sh, void *to)
{
	double v = 0;
	switch (k) {
	case FLAG:
	case ACTION:
		return (*(bool *)to = true);
	case STRING:
		*(const char **)to = s;
		return true;
	case OUTPUT:
		*(const char **)to = strcmp(s, "-") ? s : NULL;
		return true;
	case RATE:
		if (strcmp(s, "max") && (!number(s, &v) || v > max_rate[sh]))
			return false;
		*(double *)to = v;
		return true;
	case SECONDS:
		return number(s, to);
	case OFFSET:
		if (!strcmp(s, "0"))
			return (*(double *)to = 0, true);
		return number(s, to);
	case COUNT:
		if (!number(s, &v) || v > max_count[sh] ||
		    v != (double)(uint64_t)v)
			return false;
		*(uint64_t *)to = (uint64_t)v;
		return true;
	case LIMIT:
		if (strcmp(s, "0") && !number(s, &v))
			return false;
		*(size_t *)to = (size_t)v;
		return true;
	case SIZE:
	case DEPTH:
		if (strcmp(s, "0") && !number(s, &v))
			return false;
		if (v != (double)(unsigned)v || v > (k == SIZE ? 10000 : 20))
			return false;
		*(unsigned *)to = (unsigned)v;
		return true;
	case MODE:
		return pyd_sample_mode_named(s, to);
	case FORMAT:
		return (*(const struct pyd_prof_format **)to =
		            pyd_prof_format_named(s));
	case DIFF_FORMAT:
		for (const char *const *f = pyd_diff_formats; *f; f++)
			if (!strcmp(s, *f))
				return (*(const char **)to = *f);
		return false;
	}
	return false;
}

static void diff_format_names(char *out, size_t size)
{
	size_t len = 0;
	for (const char *const *f = pyd_diff_formats; *f && len < size; f++)
		len += (size_t)snprintf(out + len, size - len, "%s%s",
		                        f == pyd_diff_formats ? "" : ", ", *f);
}

static void mode_names(char *out, size_t size)
{
	size_t len = 0;
	for (unsigned m = 0; m < PYD_SAMPLE_MODES && len < size; m++)
		len += (size_t)snprintf(out + len, size - len, "%s%s",
		                        m ? ", " : "", pyd_sample_modes[m].name);
}

/*
 * The words for a value a kind refuses: with names to choose from,
 * "unknown NOUN 'x' (names)" in the CLI and "unknown NOUN" in the
 * debuggers; else "--name wants WANTS, not 'x'" and "bad NOUN".
 */
static const struct refusal {
	const char *noun, *wants;
	void (*names)(char *out, size_t size);
} refusals[] = {
    [RATE] = {"rate", "a number of samples per second or 'max'", NULL},
    [SECONDS] = {"duration", "seconds", NULL},
    [OFFSET] = {"time", "seconds from the start", NULL},
    [COUNT] = {"count", "a count", NULL},
    [LIMIT] = {"limit", "a count", NULL},
    [SIZE] = {"size", "a whole number from 0 to 10000", NULL},
    [DEPTH] = {"depth", "a whole number from 0 to 20", NULL},
    [MODE] = {"mode", NULL, mode_names},
    [FORMAT] = {"format", NULL, pyd_prof_format_list},
    [DIFF_FORMAT] = {"format", NULL, diff_format_names},
};

static bool takes_value(const struct opt *p)
{
	return p->kind > ACTION;
}

static bool set(const struct opt *p, const char *s, enum shell sh,
                struct pyd_opts *o)
{
	return parse(p->kind, s, sh, (char *)o + p->at);
}

/* What every command starts from; serve samples at Go's profiler's rate,
 * a fleet's scrapes being many and long. */
static void defaults(struct pyd_opts *o, unsigned in)
{
	*o = (struct pyd_opts){.rate = in == PYD_IN_SERVE ? 100 : 1000,
	                       .mode = PYD_SAMPLE_WALL,
	                       .limit = 40,
	                       .repr = PYD_REPR_DEFAULTS};
}

/* ---- the CLI ---- */

/* getopt_long's code for an option: its letter, else past any char. */
static int code(const struct opt *p)
{
	return p->letter ? p->letter : 256 + (int)(p - opts);
}

/* Why the CLI refused value s of option p. */
static void cli_refused(const struct opt *p, const char *s, char *err,
                        size_t errsz)
{
	const struct refusal *k = &refusals[p->kind];
	char names[256];
	if (k->names) {
		k->names(names, sizeof names);
		snprintf(err, errsz, "unknown %s '%s' (%s)", k->noun, s, names);
	} else {
		snprintf(err, errsz, "--%s wants %s, not '%s'", p->name,
		         k->wants, s);
	}
}

bool pyd_opts_getopt(int argc, char **argv, unsigned in, struct pyd_opts *o,
                     char *err, size_t errsz)
{
	struct option longopts[NOPTS + 1] = {{0}};
	/* Options go anywhere, before or after the PID, as GNU programs take
	 * them (getopt_long permutes); "--" ends them. */
	char letters[1 + 2 * NOPTS] = "", *l = letters;
	size_t n = 0;
	for (const struct opt *p = opts; p < opts + NOPTS; p++) {
		if (!(p->in & in))
			continue;
		if (p->name)
			longopts[n++] = (struct option){
			    p->name,
			    takes_value(p) ? required_argument : no_argument,
			    NULL, code(p)};
		if (p->letter) {
			*l++ = p->letter;
			if (takes_value(p))
				*l++ = ':';
		}
	}
	*l = 0;
	defaults(o, in);
	/* 0, not 1: glibc then starts afresh (a test parses many argvs) */
	optind = 0;
	int c;
	while ((c = getopt_long(argc, argv, letters, longopts, NULL)) != -1) {
		const struct opt *p = opts;
		while (p < opts + NOPTS && !((p->in & in) && code(p) == c))
			p++;
		if (p == opts + NOPTS) {
			snprintf(err, errsz,
			         "option '%s' is unknown or needs a value",
			         argv[optind - 1]);
			return false;
		}
		if (!set(p, optarg, CLI, o)) {
			cli_refused(p, optarg, err, errsz);
			return false;
		}
		if (p->kind == ACTION)
			break;
	}
	return true;
}

/* ---- the debuggers ---- */

static bool fail(char *err, size_t errsz, const char *name, const char *what,
                 const char *word)
{
	snprintf(err, errsz, "%s: %s '%s'. Try: help %s", name, what, word,
	         name);
	return false;
}

/* w is one of the blank-separated words. */
static bool is_word(const char *words, const char *w)
{
	size_t len = strlen(w);
	for (const char *s = words; *s; s += strspn(s, " ")) {
		size_t n = strcspn(s, " ");
		if (n == len && !strncmp(s, w, n))
			return true;
		s += n;
	}
	return false;
}

/* Command in's option spelled w; or (w NULL) its operand. */
static const struct opt *find_word(unsigned in, const char *w)
{
	for (const struct opt *p = opts; p < opts + NOPTS; p++)
		if ((p->in & in) && p->words &&
		    (w ? is_word(p->words, w) : !*p->words))
			return p;
	return NULL;
}

bool pyd_opts_words(unsigned in, const char *name, char **w, size_t n,
                    struct pyd_opts *o, char *err, size_t errsz)
{
	const struct opt *operand = find_word(in, NULL);
	bool have_operand = false;
	defaults(o, in);
	for (size_t i = 0; i < n; i++) {
		const struct opt *p = find_word(in, w[i]);
		if (p && takes_value(p) && i + 1 == n)
			return fail(err, errsz, name, "missing value for",
			            w[i]);
		const char *v = p && takes_value(p) ? w[++i] : w[i];
		if (p && !set(p, v, DEBUGGER, o)) {
			const struct refusal *k = &refusals[p->kind];
			char what[64];
			snprintf(what, sizeof what, "%s %s",
			         k->names ? "unknown" : "bad", k->noun);
			return fail(err, errsz, name, what, v);
		}
		if (!p &&
		    (!operand || have_operand || !set(operand, v, DEBUGGER, o)))
			return fail(err, errsz, name, "unexpected argument", v);
		have_operand |= !p;
	}
	return true;
}

size_t pyd_opts_most_words(unsigned in)
{
	size_t n = 0;
	for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
		if ((opts[k].in & in) && opts[k].words)
			n += *opts[k].words && takes_value(&opts[k]) ? 2 : 1;
	return n;
}

const char *pyd_opts_nth_words(unsigned in, size_t i)
{
	for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
		if ((opts[k].in & in) && opts[k].words && *opts[k].words &&
		    i-- == 0)
			return opts[k].words;
	return NULL;
}
