/*
 * Python's repr() of an object, rendered from the target's memory and
 * bounded (struct pyd_repr_limits): None, bool, int, float, str, bytes and
 * tuple / list / dict / set / frozenset of them as repr() prints them;
 * anything else as <TYPE object at 0xADDR>.  No code runs in the target.
 */
#ifndef PYD_DECODE_REPR_H
#define PYD_DECODE_REPR_H

#include "../buf.h"
#include "session.h"

/* What a value is, by its type (the exact built-in types only). */
enum pyd_kind {
	PYD_KIND_OTHER,
	PYD_KIND_NONE,
	PYD_KIND_BOOL,
	PYD_KIND_INT,
	PYD_KIND_FLOAT,
	PYD_KIND_STR,
	PYD_KIND_BYTES,
	PYD_KIND_TUPLE,
	PYD_KIND_LIST,
	PYD_KIND_DICT,
	PYD_KIND_SET,
	PYD_KIND_FROZENSET,
	PYD_KIND_CELL,
};

/* Types already classified, by address: one dump sees few. */
#define PYD_REPR_TYPES 64

/* An object whose items are being rendered, and the one whose items it
 * is among: the path from the value asked for down to the current one. */
struct pyd_repr_path {
	uint64_t obj;
	const struct pyd_repr_path *up;
};

struct pyd_repr {
	struct pyd_session *s;
	struct pyd_repr_limits lim;
	const struct pyd_repr_path *path; /* innermost; NULL at the top */
	struct {
		uint64_t type;
		enum pyd_kind kind;
		char name[64];
	} types[PYD_REPR_TYPES];
};

void pyd_repr_init(struct pyd_repr *r, struct pyd_session *s,
		   const struct pyd_repr_limits *lim);

/* The kind of the object at obj (its type's name into name, if not
 * NULL); false if its type cannot be read. */
bool pyd_repr_kind(struct pyd_repr *r, uint64_t obj, enum pyd_kind *kind,
		   const char **name);

/* Append the repr of the object at obj to out. */
void pyd_repr_append(struct pyd_repr *r, uint64_t obj, struct pyd_buf *out);

/* The same as a malloc'd string (NULL if out of memory); if tagged_int,
 * obj is a 3.14+ stack reference holding an int (PyStackRef_TagInt):
 * its value. */
char *pyd_repr_str(struct pyd_repr *r, uint64_t obj, bool tagged_int);

/* Python's repr() of a float: the shortest string that reads back. */
void pyd_repr_float(double d, char *out, size_t outsz);

#endif
