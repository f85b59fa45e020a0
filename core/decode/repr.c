/*
 * Bounded reprs of target objects (repr.h).
 *
 * Each rule follows CPython's own: unicode_repr (quote choice, escapes,
 * Py_UNICODE_ISPRINTABLE), bytes_repr, float_repr (shortest round trip,
 * exponent outside 1e-4 <= |x| < 1e16), long_to_decimal_string, and
 * reprlib's placeholders for containers past the depth limit ("[...]"),
 * and Py_ReprEnter's for a container met again inside itself.
 * A value cut at a limit ends in "...", an int past `digits` digits shows
 * its first 20 and how many it has.  A failed read shows as
 * <unreadable at 0xADDR> for that value only.
 */
#include "repr.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "printable.h"

#define TPFLAGS_TYPE_SUBCLASS (1ULL << 31)
/* 30-bit digits of an int we convert to decimal (about 18,000 decimal
 * digits): the conversion is quadratic. */
#define MAX_INT_DIGITS 2000
/* Digits an int cut at the limit still shows. */
#define INT_HEAD 20

void pyd_repr_init(struct pyd_repr *r, struct pyd_session *s,
		   const struct pyd_repr_limits *lim)
{
	memset(r, 0, sizeof *r);
	r->s = s;
	r->lim = *lim;
}

static const struct {
	const char *name;
	enum pyd_kind kind;
} builtin[] = {
	{"NoneType", PYD_KIND_NONE}, {"bool", PYD_KIND_BOOL},
	{"int", PYD_KIND_INT},       {"float", PYD_KIND_FLOAT},
	{"str", PYD_KIND_STR},       {"bytes", PYD_KIND_BYTES},
	{"tuple", PYD_KIND_TUPLE},   {"list", PYD_KIND_LIST},
	{"dict", PYD_KIND_DICT},     {"set", PYD_KIND_SET},
	{"frozenset", PYD_KIND_FROZENSET}, {"cell", PYD_KIND_CELL},
};

/* A built-in type is static (not a heap type) and has its name: a
 * subclass, or a user class called "int", is a heap type. */
static enum pyd_kind classify(struct pyd_session *s, uint64_t type,
			      const char *name)
{
	uint64_t flags;
	if (pyd_read_ptr(s, type + (uint64_t)s->layout.object.tp_flags, &flags) ||
	    (flags & PYD_TPFLAGS_HEAPTYPE))
		return PYD_KIND_OTHER;
	for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
		if (!strcmp(name, builtin[i].name))
			return builtin[i].kind;
	return PYD_KIND_OTHER;
}

bool pyd_repr_kind(struct pyd_repr *r, uint64_t obj, enum pyd_kind *kind,
		   const char **name)
{
	uint64_t type;
	if (pyd_obj_type(r->s, obj, &type) || !type)
		return false;
	size_t h = (size_t)((type * 0x9E3779B97F4A7C15ULL) >> 58);
	if (r->types[h].type != type) {
		char tname[64];
		pyd_type_name(r->s, type, tname, sizeof tname);
		if (!tname[0])
			return false;
		r->types[h].type = type;
		r->types[h].kind = classify(r->s, type, tname);
		memcpy(r->types[h].name, tname, sizeof tname);
	}
	*kind = r->types[h].kind;
	if (name)
		*name = r->types[h].name;
	return true;
}

static void unreadable(struct pyd_buf *out, uint64_t obj)
{
	pyd_buf_put(out, "<unreadable at ", 15);
	pyd_buf_hex(out, obj);
	pyd_buf_put(out, ">", 1);
}

/* ---- str and bytes -------------------------------------------------- */

static bool printable(uint32_t c)
{
	size_t lo = 0, hi = sizeof nonprintable / sizeof *nonprintable;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c < nonprintable[mid][0])
			hi = mid;
		else if (c > nonprintable[mid][1])
			lo = mid + 1;
		else
			return false;
	}
	return true;
}

static void put_utf8(struct pyd_buf *out, uint32_t c)
{
	char u[4];
	size_t n;
	if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6);
		u[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12);
		u[1] = (char)(0x80 | (c >> 6 & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | c >> 18);
		u[1] = (char)(0x80 | (c >> 12 & 0x3f));
		u[2] = (char)(0x80 | (c >> 6 & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	pyd_buf_put(out, u, n);
}

/* Python's choice: single quotes, unless the text has one and no double. */
static char quote_for(const uint32_t *c, size_t n)
{
	bool single = false, dbl = false;
	for (size_t i = 0; i < n; i++) {
		single |= c[i] == '\'';
		dbl |= c[i] == '"';
	}
	return single && !dbl ? '"' : '\'';
}

/* One character of a str (is_bytes false) or a bytes, escaped as repr()
 * escapes it inside quote q. */
static void put_escaped(struct pyd_buf *out, uint32_t c, char q, bool is_bytes)
{
	if (c == (uint32_t)q || c == '\\')
		pyd_buf_printf(out, "\\%c", (char)c);
	else if (c == '\t')
		pyd_buf_put(out, "\\t", 2);
	else if (c == '\n')
		pyd_buf_put(out, "\\n", 2);
	else if (c == '\r')
		pyd_buf_put(out, "\\r", 2);
	else if (c < ' ' || c == 0x7f || (is_bytes && c > 0x7f))
		pyd_buf_printf(out, "\\x%02x", c);
	else if (c < 0x7f)
		pyd_buf_printf(out, "%c", (char)c);
	else if (printable(c))
		put_utf8(out, c);
	else if (c <= 0xff)
		pyd_buf_printf(out, "\\x%02x", c);
	else if (c <= 0xffff)
		pyd_buf_printf(out, "\\u%04x", c);
	else
		pyd_buf_printf(out, "\\U%08x", c);
}

static bool plain(uint32_t c, char q)
{
	return c >= ' ' && c < 0x7f && c != (uint32_t)q && c != '\\';
}

static void put_quoted(struct pyd_buf *out, const uint32_t *c, size_t n,
		       size_t len, bool is_bytes)
{
	char q = quote_for(c, n), run[64];
	if (is_bytes)
		pyd_buf_put(out, "b", 1);
	pyd_buf_put(out, &q, 1);
	/* Runs of characters that stand for themselves go in one copy. */
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		while (i < n && k < sizeof run && plain(c[i], q))
			run[k++] = (char)c[i++];
		pyd_buf_put(out, run, k);
		if (!k)
			put_escaped(out, c[i++], q, is_bytes);
	}
	pyd_buf_put(out, &q, 1);
	if (len > n)
		pyd_buf_put(out, "...", 3);
}

static void repr_str(struct pyd_repr *r, uint64_t obj, struct pyd_buf *out)
{
	uint32_t *c;
	size_t n, len;
	if (pyd_read_codepoints(r->s, obj, r->lim.string, &c, &n, &len)) {
		unreadable(out, obj);
		return;
	}
	put_quoted(out, c, n, len, false);
	free(c);
}

static void repr_bytes(struct pyd_repr *r, uint64_t obj, struct pyd_buf *out)
{
	uint8_t *b;
	size_t n, len;
	uint32_t *c;
	if (pyd_read_bytes_head(r->s, obj, r->lim.string, &b, &n, &len)) {
		unreadable(out, obj);
		return;
	}
	if (!(c = malloc((n + 1) * sizeof *c))) {
		free(b);
		out->failed = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		c[i] = b[i];
	put_quoted(out, c, n, len, true);
	free(c);
	free(b);
}

/* ---- numbers -------------------------------------------------------- */

void pyd_repr_float(double d, char *out, size_t outsz)
{
	if (isnan(d)) {
		snprintf(out, outsz, "nan");
		return;
	}
	if (isinf(d)) {
		snprintf(out, outsz, "%sinf", d < 0 ? "-" : "");
		return;
	}
	/* The fewest significant digits that read back as d, as CPython's
	 * dtoa gives them.  "%.*e" rounds correctly, and any decimal of at
	 * most 15 digits (DBL_DIG) survives the trip to a double and back:
	 * if 15 digits read back, the shortest is them without trailing
	 * zeros; else 16 or 17 digits are needed.  Subnormals have fewer
	 * bits than that promise needs: for them, every length is tried. */
	char e[40];
	for (int prec = fabs(d) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
		snprintf(e, sizeof e, "%.*e", prec - 1, d);
		if (strtod(e, NULL) == d)
			break;
	}
	char digits[24];
	size_t nd = 0;
	const char *p = e + (e[0] == '-');
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	int decpt = atoi(p + 1) + 1; /* digits are 0.DIGITS x 10^decpt */
	const char *sign = signbit(d) ? "-" : "";
	if (decpt <= -4 || decpt > 16) {
		int x = decpt - 1;
		snprintf(out, outsz, "%s%c%s%se%c%02d", sign, digits[0],
			 nd > 1 ? "." : "", digits + 1, x < 0 ? '-' : '+',
			 x < 0 ? -x : x);
	} else if (decpt <= 0) {
		snprintf(out, outsz, "%s0.%.*s%s", sign, -decpt,
			 "0000", digits);
	} else if ((size_t)decpt >= nd) {
		snprintf(out, outsz, "%s%s%.*s.0", sign, digits,
			 decpt - (int)nd, "0000000000000000");
	} else {
		snprintf(out, outsz, "%s%.*s.%s", sign, decpt, digits,
			 digits + decpt);
	}
}

static void repr_float_obj(struct pyd_repr *r, uint64_t obj,
			   struct pyd_buf *out)
{
	double d;
	char s[48];
	if (pyd_read(r->s->src, obj + (uint64_t)r->s->layout.vars.ob_fval, &d,
		     sizeof d)) {
		unreadable(out, obj);
		return;
	}
	pyd_repr_float(d, s, sizeof s);
	pyd_buf_str(out, s);
}

/* Base 10^9 limbs (least significant first) of the 30-bit digits d[0..n). */
static size_t to_base1e9(uint32_t *d, size_t n, uint32_t *limbs)
{
	size_t nl = 0;
	while (n) {
		uint64_t rem = 0;
		for (size_t i = n; i-- > 0;) {
			uint64_t cur = rem << 30 | d[i];
			d[i] = (uint32_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		limbs[nl++] = (uint32_t)rem;
		while (n && !d[n - 1])
			n--;
	}
	return nl;
}

static void put_decimal(struct pyd_repr *r, bool neg, const uint32_t *limbs,
			size_t nl, struct pyd_buf *out)
{
	char *dec = malloc(nl * 9 + 2);
	if (!dec) {
		out->failed = true;
		return;
	}
	size_t len = (size_t)sprintf(dec, "%u", nl ? limbs[nl - 1] : 0);
	for (size_t i = nl - (nl > 0); i-- > 0;)
		len += (size_t)sprintf(dec + len, "%09u", limbs[i]);
	if (len > r->lim.digits)
		pyd_buf_printf(out, "%s%.*s... (%zu digits)", neg ? "-" : "",
			       INT_HEAD, dec, len);
	else
		pyd_buf_printf(out, "%s%s", neg ? "-" : "", dec);
	free(dec);
}

/*
 * An int past MAX_INT_DIGITS (Python itself prints none past 4,300
 * digits unless told to): how many decimal digits it has, from its top
 * three 30-bit digits and its length, in long double.  The log is good to
 * about 1e-12 there, so the count is exact unless the value lies that
 * close to a power of ten: then it says "about".
 */
/*
 * log10(x), x > 0, without libm, which every dump would load for this
 * one call (a third of a megabyte of its resident memory): x = f 2^e
 * with f in [1/sqrt 2, sqrt 2) (frexpl is libc's), and ln f =
 * 2 atanh((f - 1) / (f + 1)), whose series gains 5 bits a term there:
 * 16 terms are past long double's 64.
 */
static long double log10_ld(long double x)
{
	const long double ln2 = 0.693147180559945309417232121458176568L,
			  ln10 = 2.302585092994045684017991454684364208L;
	int e;
	long double f = frexpl(x, &e);
	if (f < 0.707106781186547524400844362104849039L) {
		f *= 2;
		e--;
	}
	long double z = (f - 1) / (f + 1), z2 = z * z, term = z, sum = 0;
	for (int k = 1; k < 32; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return (2 * sum + (long double)e * ln2) / ln10;
}

static void repr_giant_int(struct pyd_repr *r, uint64_t obj, bool neg,
			   uint64_t n, struct pyd_buf *out)
{
	const struct py_layout *L = &r->s->layout;
	uint32_t top[3];
	if (pyd_read(r->s->src,
		     obj + (uint64_t)L->pylong.digit + 4 * (n - 3), top,
		     sizeof top)) {
		unreadable(out, obj);
		return;
	}
	long double m = 0;
	for (int i = 2; i >= 0; i--)
		m = m * 1073741824.0L + (long double)(top[i] & 0x3fffffff);
	long double lg = log10_ld(m) + (long double)(n - 3) * 30 *
					  0.301029995663981195213738894724493027L;
	unsigned long long whole = (unsigned long long)lg; /* lg > 0 */
	long double frac = lg - (long double)whole;
	bool near = frac < 1e-10L || frac > 1 - 1e-10L;
	pyd_buf_printf(out, "<%sint of %s%llu digits at 0x%llx>",
		       neg ? "negative " : "", near ? "about " : "", whole + 1,
		       (unsigned long long)obj);
}

static void repr_int(struct pyd_repr *r, uint64_t obj, bool is_bool,
		     struct pyd_buf *out)
{
	const struct py_layout *L = &r->s->layout;
	bool neg;
	uint64_t n;
	if (pyd_long_header(r->s, obj, &neg, &n)) {
		unreadable(out, obj);
		return;
	}
	if (is_bool) {
		pyd_buf_printf(out, n ? "True" : "False");
		return;
	}
	if (n > MAX_INT_DIGITS) {
		repr_giant_int(r, obj, neg, n, out);
		return;
	}
	uint32_t *d = malloc((n + 1) * sizeof *d);
	uint32_t *limbs = malloc((n * 30 / 29 + 2) * sizeof *limbs);
	if (!d || !limbs) {
		out->failed = true;
	} else if (n && pyd_read(r->s->src, obj + (uint64_t)L->pylong.digit,
				 d, n * 4)) {
		unreadable(out, obj);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] &= 0x3fffffff;
		while (n && !d[n - 1])
			n--;
		put_decimal(r, neg && n, limbs, to_base1e9(d, n, limbs), out);
	}
	free(d);
	free(limbs);
}

/* ---- containers ----------------------------------------------------- */

static void repr_at(struct pyd_repr *r, uint64_t obj, unsigned level,
		    struct pyd_buf *out);

/* Whether obj is being rendered further out on the current path: a
 * container holding itself (directly or through others) shows as repr()
 * shows it there, not once per level down to the depth limit.  Only the
 * path counts, as for Py_ReprEnter: one object twice side by side is
 * rendered twice. */
static bool on_path(const struct pyd_repr *r, uint64_t obj)
{
	for (const struct pyd_repr_path *p = r->path; p; p = p->up)
		if (p->obj == obj)
			return true;
	return false;
}

/* What repr() prints for a container on its own path (list_repr,
 * dict_repr, tuplerepr, set_repr past Py_ReprEnter): a tuple can get
 * there through a list it holds, a set or frozenset only through an
 * instance's attributes (py-print). */
static const char *recursion_mark(enum pyd_kind kind)
{
	switch (kind) {
	case PYD_KIND_TUPLE:
		return "(...)";
	case PYD_KIND_LIST:
		return "[...]";
	case PYD_KIND_DICT:
		return "{...}";
	case PYD_KIND_SET:
		return "set(...)";
	default:
		return "frozenset(...)";
	}
}

static void put_items(struct pyd_repr *r, const uint64_t *v, size_t n,
		      size_t stride, size_t total, unsigned level,
		      struct pyd_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			pyd_buf_put(out, ", ", 2);
		repr_at(r, v[i * stride], level, out);
		if (stride == 2) {
			pyd_buf_put(out, ": ", 2);
			repr_at(r, v[i * stride + 1], level, out);
		}
	}
	if (total > n)
		pyd_buf_put(out, n ? ", ..." : "...", n ? 5 : 3);
}

static void repr_container(struct pyd_repr *r, uint64_t obj,
			   enum pyd_kind kind, unsigned level,
			   struct pyd_buf *out)
{
	uint64_t *v = NULL;
	size_t n = 0, total = 0;
	enum pyd_err err;
	size_t max = level < r->lim.depth ? r->lim.items : 0;
	const char *open = "[", *close = "]";
	if (on_path(r, obj)) {
		pyd_buf_printf(out, "%s", recursion_mark(kind));
		return;
	}
	switch (kind) {
	case PYD_KIND_TUPLE:
	case PYD_KIND_LIST:
		err = pyd_seq_items(r->s, obj, kind == PYD_KIND_LIST, max, &v,
				    &n, &total);
		if (kind == PYD_KIND_TUPLE) {
			open = "(";
			close = total == 1 && n == 1 ? ",)" : ")";
		}
		break;
	case PYD_KIND_DICT:
		err = pyd_dict_items(r->s, obj, max, &v, &n, &total);
		open = "{";
		close = "}";
		break;
	default:
		err = pyd_set_items(r->s, obj, max, &v, &n, &total);
		bool frozen = kind == PYD_KIND_FROZENSET;
		open = frozen ? "frozenset({" : "{";
		close = frozen ? "})" : "}";
		if (!err && !total) {
			pyd_buf_printf(out, frozen ? "frozenset()" : "set()");
			free(v);
			return;
		}
		break;
	}
	if (err) {
		unreadable(out, obj);
	} else {
		struct pyd_repr_path here = {obj, r->path};
		r->path = &here;
		pyd_buf_put(out, open, strlen(open));
		put_items(r, v, n, kind == PYD_KIND_DICT ? 2 : 1, total,
			  level + 1, out);
		pyd_buf_put(out, close, strlen(close));
		r->path = here.up;
	}
	free(v);
}

/* Whether obj is a plain instance of a user class, the only objects whose
 * attributes py-print shows: its type is a heap type (a class statement),
 * and not a metaclass (the object would be a class).  Modules, functions,
 * classes and the other built-ins are not: their __dict__ is their
 * namespace (py-print of a module printed its whole dict). */
static bool plain_instance(struct pyd_repr *r, uint64_t obj)
{
	uint64_t type, flags;
	if (pyd_obj_type(r->s, obj, &type) || !type ||
	    pyd_read_ptr(r->s, type + (uint64_t)r->s->layout.object.tp_flags,
			 &flags))
		return false;
	return (flags & PYD_TPFLAGS_HEAPTYPE) && !(flags & TPFLAGS_TYPE_SUBCLASS);
}

/* <Name object at 0xADDR>, with the first attributes of a plain instance
 * of a user class when asked for (py-print); without them inside its own
 * attributes. */
static void repr_other(struct pyd_repr *r, uint64_t obj, const char *name,
		       unsigned level, struct pyd_buf *out)
{
	uint64_t owner, *kv = NULL;
	size_t n = 0;
	struct pyd_repr_path here = {obj, r->path};
	pyd_buf_put(out, "<", 1);
	pyd_buf_str(out, name);
	pyd_buf_put(out, " object at ", 11);
	pyd_buf_hex(out, obj);
	if (r->lim.attrs && level < r->lim.depth && !on_path(r, obj) &&
	    plain_instance(r, obj) &&
	    !pyd_obj_attrs(r->s, obj, r->lim.items, &owner, &kv, &n) && n) {
		r->path = &here;
		pyd_buf_put(out, ": ", 2);
		for (size_t i = 0; i < n; i++) {
			char *key = pyd_read_str(r->s, kv[2 * i]);
			pyd_buf_printf(out, "%s%s=", i ? ", " : "",
				       key ? key : "?");
			free(key);
			repr_at(r, kv[2 * i + 1], level + 1, out);
		}
		r->path = here.up;
	}
	free(kv);
	pyd_buf_put(out, ">", 1);
}

static void repr_at(struct pyd_repr *r, uint64_t obj, unsigned level,
		    struct pyd_buf *out)
{
	enum pyd_kind kind;
	const char *name;
	if (!pyd_repr_kind(r, obj, &kind, &name)) {
		unreadable(out, obj);
		return;
	}
	switch (kind) {
	case PYD_KIND_NONE:
		pyd_buf_put(out, "None", 4);
		break;
	case PYD_KIND_BOOL:
	case PYD_KIND_INT:
		repr_int(r, obj, kind == PYD_KIND_BOOL, out);
		break;
	case PYD_KIND_FLOAT:
		repr_float_obj(r, obj, out);
		break;
	case PYD_KIND_STR:
		repr_str(r, obj, out);
		break;
	case PYD_KIND_BYTES:
		repr_bytes(r, obj, out);
		break;
	case PYD_KIND_TUPLE:
	case PYD_KIND_LIST:
	case PYD_KIND_DICT:
	case PYD_KIND_SET:
	case PYD_KIND_FROZENSET:
		repr_container(r, obj, kind, level, out);
		break;
	case PYD_KIND_CELL:
	case PYD_KIND_OTHER:
		repr_other(r, obj, name, level, out);
		break;
	}
}

char *pyd_repr_str(struct pyd_repr *r, uint64_t obj, bool tagged_int)
{
	struct pyd_buf b = {0};
	if (tagged_int)
		pyd_buf_printf(&b, "%lld", (long long)((int64_t)obj >> 2));
	else
		pyd_repr_append(r, obj, &b);
	return pyd_buf_take(&b);
}

void pyd_repr_append(struct pyd_repr *r, uint64_t obj, struct pyd_buf *out)
{
	repr_at(r, obj, 0, out);
}
