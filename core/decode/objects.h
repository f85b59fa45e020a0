/*
 * The object readers every decoder uses, in one place: pointers, str,
 * bytes, types, dict, instance attributes, set, weakref, tuple / list,
 * int, driven by the per-version layout (layout.h).
 *
 * Every pointer is the target's and may be stale or garbage: every read
 * goes through the memory source, every table is bounded, and a failure
 * is an error code, never a crash.  Lookups compare keys as str by value
 * (no hashing), walking the table's entries in order.
 */
#ifndef PYD_DECODE_OBJECTS_H
#define PYD_DECODE_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* Where an object's own fields start: past PyObject_HEAD, whose last
 * member is ob_type in every build (16 bytes; 32 free-threaded). */
static inline uint64_t pyd_obj_head(const struct py_layout *L)
{
	return (uint64_t)L->object.ob_type + 8;
}

/* *md: the dict of module `name` in sys.modules of the interpreter at
 * interp (PyModuleObject.md_dict, its first field in every 3.x); 0 if
 * the interpreter has not imported it. */
enum pyd_err pyd_module_dict(struct pyd_session *s, uint64_t interp,
			     const char *name, uint64_t *md);

/* Most entries of a dict / set / sequence we read. */
#define PYD_MAX_ITEMS (1u << 22)
/* Longest str or bytes we believe (in characters): longer is garbage. */
#define PYD_MAX_STR_LEN (1LL << 40)

/* A pointer / an int32 of the target. */
enum pyd_err pyd_read_ptr(struct pyd_session *s, uint64_t addr, uint64_t *out);
enum pyd_err pyd_read_i32(struct pyd_session *s, uint64_t addr, int32_t *out);

/* A str object as UTF-8 (malloc'd; longer ones cut, with "..."); NULL on
 * a bad read or not a str. */
char *pyd_read_str(struct pyd_session *s, uint64_t addr);

/* A str's mark (unicode.h). */
/* The most a mark's span can be under layout L. */
size_t pyd_str_mark_span(const struct py_layout *L);
/* pyd_read_str, also filling *m. */
char *pyd_read_str_mark(struct pyd_session *s, uint64_t addr,
			struct pyd_str_mark *m);
/* Do the span bytes read now hold what m kept? */
bool pyd_str_mark_holds(const struct pyd_str_mark *m, const uint8_t *span);

/* The first max code points of a str (malloc'd, *n of them) and its
 * length in *len. */
enum pyd_err pyd_read_codepoints(struct pyd_session *s, uint64_t addr,
				 size_t max, uint32_t **cp, size_t *n,
				 size_t *len);

/* A bytes object's contents (malloc'd, *len bytes), at most max; NULL if
 * unreadable or longer. */
uint8_t *pyd_read_bytes(struct pyd_session *s, uint64_t addr, size_t max,
			size_t *len);
/* Its first max bytes (malloc'd, *n of them) and its length in *len. */
enum pyd_err pyd_read_bytes_head(struct pyd_session *s, uint64_t addr,
				 size_t max, uint8_t **buf, size_t *n,
				 size_t *len);

/* ob_type of obj. */
enum pyd_err pyd_obj_type(struct pyd_session *s, uint64_t obj, uint64_t *type);

/* Is the str at addr equal to the NUL-terminated key (UTF-8)? */
bool pyd_str_eq(struct pyd_session *s, uint64_t addr, const char *key);

/* tp_flags: a type made by a class statement (or PyType_FromSpec). */
#define PYD_TPFLAGS_HEAPTYPE (1ULL << 9)

/*
 * Is type one of the interpreter's own static types (generator, coroutine,
 * NoneType, ...), so that its tp_name says what it is?  A class statement
 * makes a heap type, which may have any name (a user class called
 * async_generator_asend); an extension's static types live in its own
 * file.  So: not a heap type (flags, its tp_flags), and where the source
 * names its mapped files, inside the file holding the interpreter.
 */
bool pyd_interp_static_type(struct pyd_session *s, uint64_t type,
			    uint64_t flags);

/* The NUL-terminated C string at addr into out, cut to fit ("" on a bad
 * read): a tp_name, a PyMethodDef's ml_name. */
void pyd_read_cstr(struct pyd_session *s, uint64_t addr, char *out,
		   size_t outsz);

/* Is type the interpreter's own static type called name ("function",
 * "module", ...)? */
bool pyd_builtin_type_is(struct pyd_session *s, uint64_t type,
			 const char *name);
/* The name of type if it is one of the interpreter's own static types,
 * else NULL; kept by the session's type cache until the next lookup. */
const char *pyd_builtin_type_name(struct pyd_session *s, uint64_t type);

/* The type's tp_name into out ("" on failure). */
void pyd_type_name(struct pyd_session *s, uint64_t type, char *out,
		   size_t outsz);

/* dict[key] for a str key; PYD_E_NOT_FOUND-like: *val = 0 if absent. */
enum pyd_err pyd_dict_get(struct pyd_session *s, uint64_t dict,
			  const char *key, uint64_t *val);

/* getattr(obj, key) for an attribute kept in the instance's __dict__
 * (or its inline / split values); *val = 0 if absent or no dict. */
enum pyd_err pyd_obj_attr(struct pyd_session *s, uint64_t obj,
			  const char *key, uint64_t *val);

/* The first max (key, value) pairs of a dict; malloc'd array of 2*n
 * words in *kv; *used (if not NULL) is how many it holds. */
enum pyd_err pyd_dict_items(struct pyd_session *s, uint64_t dict, size_t max,
			    uint64_t **kv, size_t *n, size_t *used);

/* The first max (name, value) pairs of an instance's attributes (its
 * __dict__, or values split from the keys its type caches), as
 * pyd_dict_items gives them; *owner is the dict or keys table they are
 * in (0 and none if it has no attributes). */
enum pyd_err pyd_obj_attrs(struct pyd_session *s, uint64_t obj, size_t max,
			   uint64_t *owner, uint64_t **kv, size_t *n);

/* The value of str key among the n pairs kv of the dict (or split keys
 * table) at owner, as pyd_dict_items gives them; *val = 0 if absent. */
enum pyd_err pyd_kv_find(struct pyd_session *s, uint64_t owner,
			 const uint64_t *kv, size_t n, const char *key,
			 uint64_t *val);

/* The first max keys of a set (or frozenset), in table order; malloc'd;
 * *used (if not NULL) is how many it holds. */
enum pyd_err pyd_set_items(struct pyd_session *s, uint64_t set, size_t max,
			   uint64_t **keys, size_t *n, size_t *used);

/* A short compact ASCII str whose object is all in the got bytes of buf
 * (already read: one read instead of pyd_read_str's two); malloc'd, NULL
 * if it is not one. */
char *pyd_short_ascii(const struct py_layout *L, const uint8_t *buf,
		      size_t got);
/* Item i of a tuple; PYD_E_READ past its end. */
enum pyd_err pyd_tuple_item(struct pyd_session *s, uint64_t tuple,
			    size_t i, uint64_t *item);

/* The first max items of a tuple (is_list false) or a list; malloc'd;
 * *size (if not NULL) is its length. */
enum pyd_err pyd_seq_items(struct pyd_session *s, uint64_t seq, bool is_list,
			   size_t max, uint64_t **items, size_t *n,
			   size_t *size);

/* The same from the int's first len bytes in buf (already read); false
 * if it does not fit 90 bits or its digits are not all in buf. */
bool pyd_long_decode(const struct py_layout *L, const uint8_t *buf,
		     size_t len, int64_t *v);
/* An int's sign and how many 30-bit digits it has (at
 * layout.pylong.digit); PYD_E_READ if its header is not an int's. */
enum pyd_err pyd_long_header(struct pyd_session *s, uint64_t obj, bool *neg,
			     uint64_t *ndigits);
/* The value of an int that fits in 64 bits (sign kept). */
enum pyd_err pyd_long_value(struct pyd_session *s, uint64_t obj, int64_t *v);

/* The referent of a weakref (0 if dead). */
enum pyd_err pyd_weakref_get(struct pyd_session *s, uint64_t ref,
			     uint64_t *obj);

#endif
