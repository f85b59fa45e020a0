/*
 * Generic CPython object readers (see objects.h).
 *
 * Dicts.  <= 3.10: PyDictKeysObject { dk_refcnt, dk_size, dk_lookup,
 * dk_usable, dk_nentries, dk_indices[dk_size * index bytes] } followed by
 * the entries {hash, key, value}; the index width is 1, 2, 4 or 8 bytes by
 * dk_size.  3.11+: dk_log2_size, dk_log2_index_bytes (log2 of the whole
 * index array), dk_kind (0 general: {hash, key, value} entries; 1 unicode
 * and 2 split: {key, value}).  A split dict (ma_values set) keeps entry
 * i's value in values[i] (3.11+: PyDictValues.values[i]).
 *
 * Instance attributes.  <= 3.10 the dict pointer is at tp_dictoffset.
 * 3.11: Py_TPFLAGS_MANAGED_DICT types keep the dict pointer 3 words
 * before the object and a PyDictValues pointer 4 words before it; 3.12:
 * one word 3 before, a dict or (char *)values - 1 (odd); 3.13: the dict 3 words
 * before, and with Py_TPFLAGS_INLINE_VALUES the values right after the
 * object (at tp_basicsize), used while their `valid` byte is set.  Values
 * without a dict take their keys from the type's ht_cached_keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "unicode.h"

#define TPFLAGS_INLINE_VALUES (1ULL << 2)
#define TPFLAGS_MANAGED_DICT (1ULL << 4)

#define OT(s) (&(s)->layout.objects)

static enum pyd_err rd(struct pyd_session *s, uint64_t addr, void *buf,
		       size_t len)
{
	if (!addr)
		return PYD_E_READ;
	return pyd_read(s->src, addr, buf, len);
}

/* ---- words, strings, bytes ---------------------------------------- */

enum pyd_err pyd_read_ptr(struct pyd_session *s, uint64_t addr, uint64_t *out)
{
	return pyd_read(s->src, addr, out, sizeof *out);
}

enum pyd_err pyd_read_i32(struct pyd_session *s, uint64_t addr, int32_t *out)
{
	return pyd_read(s->src, addr, out, sizeof *out);
}

/* Where the str at addr keeps its characters: at *data, kind bytes each,
 * *len of them; m (if not NULL) gets its length and where its data is. */
static enum pyd_err str_data(struct pyd_session *s, uint64_t addr,
			     uint64_t *data, unsigned *kind, size_t *len,
			     struct pyd_str_mark *m)
{
	const struct py_layout *L = &s->layout;
	uint8_t head[128];
	enum pyd_err err;
	if (!addr || (size_t)L->unicode.compact_size + 8 > sizeof head)
		return PYD_E_READ;
	if ((err = pyd_read(s->src, addr, head,
			    (size_t)L->unicode.compact_size + 8)))
		return err;
	int64_t n = (int64_t)pyd_u64_at(head, L->unicode.length);
	uint32_t state;
	memcpy(&state, head + L->unicode.state, sizeof state);
	struct pyd_str_state st = pyd_str_state_decode(state, L->unicode.kind_bit);
	if (n < 0 || n > PYD_MAX_STR_LEN ||
	    (st.kind != 1 && st.kind != 2 && st.kind != 4))
		return PYD_E_READ;
	int32_t at = st.compact ? (st.ascii ? L->unicode.ascii_size
					    : L->unicode.compact_size)
				: L->unicode.legacy_data;
	if (st.compact)
		*data = addr + (uint64_t)at;
	else
		*data = pyd_u64_at(head, L->unicode.legacy_data);
	*kind = st.kind;
	*len = (size_t)n;
	if (m) {
		size_t bytes = (size_t)n * st.kind;
		m->length = (uint64_t)n;
		m->at = (uint8_t)(at - L->unicode.length);
		m->n = st.compact ? (uint8_t)(bytes < PYD_STR_MARK_DATA
						      ? bytes
						      : PYD_STR_MARK_DATA)
				  : 8;
		m->span = (uint8_t)(m->at + m->n);
		if (!st.compact)
			memcpy(m->data, head + at, 8);
	}
	return PYD_OK;
}

size_t pyd_str_mark_span(const struct py_layout *L)
{
	return (size_t)(L->unicode.compact_size - L->unicode.length) +
	       PYD_STR_MARK_DATA;
}

char *pyd_read_str_mark(struct pyd_session *s, uint64_t addr,
			struct pyd_str_mark *m)
{
	uint64_t data;
	unsigned kind;
	size_t len;
	if (str_data(s, addr, &data, &kind, &len, m))
		return NULL;
	size_t n = len > PYD_MAX_STR_CHARS ? PYD_MAX_STR_CHARS : len;
	uint8_t *raw = malloc(n * kind + 1);
	char *out = malloc(n * 4 + 4);
	if (!raw || !out || pyd_read(s->src, data, raw, n * kind) ||
	    pyd_str_to_utf8(raw, n, kind, out, n * 4 + 1) < 0) {
		free(raw);
		free(out);
		return NULL;
	}
	/* A compact str's data is its own, at raw (n * kind >= m->n) */
	if (m && data == addr + s->layout.unicode.length + m->at)
		memcpy(m->data, raw, m->n);
	free(raw);
	if (len > n)
		strcat(out, "...");
	return out;
}

char *pyd_read_str(struct pyd_session *s, uint64_t addr)
{
	return pyd_read_str_mark(s, addr, NULL);
}

bool pyd_str_mark_holds(const struct pyd_str_mark *m, const uint8_t *span)
{
	return pyd_u64_at(span, 0) == m->length &&
	       !memcmp(span + m->at, m->data, m->n);
}

enum pyd_err pyd_read_codepoints(struct pyd_session *s, uint64_t addr,
				 size_t max, uint32_t **cp, size_t *n,
				 size_t *len)
{
	uint64_t data;
	unsigned kind;
	*cp = NULL;
	*n = 0;
	enum pyd_err err = str_data(s, addr, &data, &kind, len, NULL);
	if (err)
		return err;
	size_t want = *len < max ? *len : max;
	uint8_t *raw = malloc(want * kind + 1);
	uint32_t *out = malloc(want * sizeof *out + 1);
	if (!raw || !out) {
		err = PYD_E_NOMEM;
	} else if (!(err = pyd_read(s->src, data, raw, want * kind))) {
		for (size_t i = 0; i < want; i++) {
			uint16_t u16;
			if (kind == 1) {
				out[i] = raw[i];
			} else if (kind == 2) {
				memcpy(&u16, raw + 2 * i, 2);
				out[i] = u16;
			} else {
				memcpy(&out[i], raw + 4 * i, 4);
			}
		}
		*cp = out;
		*n = want;
		out = NULL;
	}
	free(raw);
	free(out);
	return err;
}

enum pyd_err pyd_read_bytes_head(struct pyd_session *s, uint64_t addr,
				 size_t max, uint8_t **buf, size_t *n,
				 size_t *len)
{
	const struct py_layout *L = &s->layout;
	int64_t size;
	*buf = NULL;
	*n = 0;
	enum pyd_err err = rd(s, addr + (uint64_t)L->bytes.ob_size, &size,
			      sizeof size);
	if (err)
		return err;
	if (size < 0 || size > PYD_MAX_STR_LEN)
		return PYD_E_READ;
	*len = (size_t)size;
	size_t want = *len < max ? *len : max;
	uint8_t *out = malloc(want + 1);
	if (!out)
		return PYD_E_NOMEM;
	if ((err = pyd_read(s->src, addr + (uint64_t)L->bytes.ob_sval, out,
			    want))) {
		free(out);
		return err;
	}
	*buf = out;
	*n = want;
	return PYD_OK;
}

uint8_t *pyd_read_bytes(struct pyd_session *s, uint64_t addr, size_t max,
			size_t *len)
{
	const struct py_layout *L = &s->layout;
	int64_t size;
	if (!addr || pyd_read(s->src, addr + (uint64_t)L->bytes.ob_size, &size,
			      sizeof size) ||
	    size < 0 || (uint64_t)size > max)
		return NULL;
	uint8_t *buf = malloc((size_t)size + 1);
	if (buf && pyd_read(s->src, addr + (uint64_t)L->bytes.ob_sval, buf,
			    (size_t)size)) {
		free(buf);
		return NULL;
	}
	*len = (size_t)size;
	return buf;
}

/* ---- types and attributes -------------------------------------------- */

enum pyd_err pyd_obj_type(struct pyd_session *s, uint64_t obj, uint64_t *type)
{
	*type = 0;
	if (!obj)
		return PYD_E_READ;
	return pyd_read_ptr(s, obj + (uint64_t)s->layout.object.ob_type, type);
}

bool pyd_str_eq(struct pyd_session *s, uint64_t addr, const char *key)
{
	const struct py_layout *L = &s->layout;
	int64_t len;
	/* Cheap reject on the length before copying the characters. */
	if (!addr || rd(s, addr + (uint64_t)L->unicode.length, &len, sizeof len) ||
	    len != (int64_t)strlen(key))
		return false;
	char *str = pyd_read_str(s, addr);
	bool eq = str && strcmp(str, key) == 0;
	free(str);
	return eq;
}

/*
 * Task decoders ask for the same few types' names all the time.  tp_name
 * points at immutable text (static types' .rodata, heap types' name), so
 * a name read once holds for as long as the type keeps that pointer:
 * checking it costs one read instead of two or three.
 */
bool pyd_interp_static_type(struct pyd_session *s, uint64_t type,
			    uint64_t flags)
{
	if (flags & PYD_TPFLAGS_HEAPTYPE)
		return false;
	const struct pyd_mapping *maps;
	size_t n;
	if (!s->src->mappings || s->src->mappings(s->src->ctx, &maps, &n))
		return true;
	bool named = false;
	for (size_t i = 0; i < n; i++) {
		if (!maps[i].path || strcmp(maps[i].path, s->rt.binary))
			continue;
		if (type >= maps[i].start && type < maps[i].end)
			return true;
		named = true;
	}
	return !named;
}

/* The cache's slot of type, its name read; NULL if that cannot be read. */
static struct pyd_type_slot *type_slot(struct pyd_session *s, uint64_t type)
{
	uint64_t name;
	if (!type ||
	    pyd_read_ptr(s, type + (uint64_t)s->layout.object.tp_name, &name) ||
	    !name)
		return NULL;
	struct pyd_type_slot *e =
		&s->types[(type * 0x9E3779B97F4A7C15ULL) >> 56];
	if (e->type != type || e->tp_name != name) {
		pyd_read_cstr(s, name, e->name, sizeof e->name);
		/* A name that could not be read is not kept as "". */
		e->type = e->name[0] ? type : 0;
		e->tp_name = name;
		e->builtin = -1;
	}
	return e->name[0] ? e : NULL;
}

void pyd_type_name(struct pyd_session *s, uint64_t type, char *out,
		   size_t outsz)
{
	const struct pyd_type_slot *e = type_slot(s, type);
	if (!outsz)
		return;
	size_t n = e ? strnlen(e->name, outsz - 1) : 0;
	if (n)
		memcpy(out, e->name, n);
	out[n] = 0;
}

const char *pyd_builtin_type_name(struct pyd_session *s, uint64_t type)
{
	struct pyd_type_slot *e = type_slot(s, type);
	uint64_t flags;
	if (!e)
		return NULL;
	if (e->builtin < 0) {
		/* Not kept where the flags could not be read (a dry run's
		 * miss): asked again. */
		if (pyd_read_ptr(s, type + (uint64_t)s->layout.object.tp_flags,
				 &flags))
			return NULL;
		e->builtin = pyd_interp_static_type(s, type, flags);
	}
	return e->builtin ? e->name : NULL;
}

bool pyd_builtin_type_is(struct pyd_session *s, uint64_t type,
			 const char *name)
{
	const char *have = pyd_builtin_type_name(s, type);
	return have && !strcmp(have, name);
}

void pyd_read_cstr(struct pyd_session *s, uint64_t name, char *out,
		   size_t outsz)
{
	out[0] = 0;
	/* Read byte runs up to the end of the page, so that a name at the
	 * end of a mapping still reads. */
	size_t n = 0;
	while (n + 1 < outsz) {
		size_t room = 4096 - (size_t)((name + n) & 4095);
		size_t want = outsz - 1 - n < room ? outsz - 1 - n : room;
		if (rd(s, name + n, out + n, want)) {
			out[0] = 0;
			return;
		}
		void *nul = memchr(out + n, 0, want);
		n += want;
		if (nul)
			return;
	}
	out[outsz - 1] = 0;
}

/* ---- dicts ----------------------------------------------------------- */

struct keys_view {
	uint64_t entries;   /* address of entry 0 */
	size_t nentries;
	size_t entry_size;  /* 24: {hash, key, value}; 16: {key, value} */
	size_t key_off;     /* of the key within an entry */
};

static enum pyd_err keys_view(struct pyd_session *s, uint64_t keys,
			      struct keys_view *v)
{
	const struct py_objects *o = OT(s);
	uint8_t hdr[64];
	if ((size_t)o->dk_indices > sizeof hdr)
		return PYD_E_READ;
	enum pyd_err err = rd(s, keys, hdr, (size_t)o->dk_indices);
	if (err)
		return err;
	int64_t nent = (int64_t)pyd_u64_at(hdr, o->dk_nentries);
	uint64_t index_bytes;
	if (o->dk_size != PYD_NO_FIELD) {
		int64_t size = (int64_t)pyd_u64_at(hdr, o->dk_size);
		if (size <= 0 || size > (1LL << 30) || (size & (size - 1)))
			return PYD_E_READ;
		unsigned w = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		index_bytes = (uint64_t)size * w;
		v->entry_size = 24;
		v->key_off = 8;
	} else {
		unsigned log2 = hdr[o->dk_log2_size];
		unsigned log2ix = hdr[o->dk_log2_index_bytes];
		unsigned kind = hdr[o->dk_kind];
		if (log2 > 30 || log2ix > 33 || log2ix < log2 || kind > 2)
			return PYD_E_READ;
		index_bytes = 1ULL << log2ix;
		v->entry_size = kind == 0 ? 24 : 16;
		v->key_off = kind == 0 ? 8 : 0;
	}
	if (nent < 0 || (uint64_t)nent > PYD_MAX_ITEMS)
		return PYD_E_READ;
	v->nentries = (size_t)nent;
	v->entries = keys + (uint64_t)o->dk_indices + index_bytes;
	return PYD_OK;
}

/* Entries (or set slots) read at a time while looking for the first
 * few live ones: a table is mostly live, so one chunk usually does. */
#define CHUNK_MIN 64

/*
 * The first max live (key, value) pairs of the keys table v views, values
 * from the entries or (split) from the values array at `values`.  Deleted and
 * empty entries (NULL key or value) are skipped.  Numbered (values 0), the
 * pairs are each key and its entry's number, and only NULL keys are
 * skipped.
 */
static enum pyd_err view_items(struct pyd_session *s,
			       const struct keys_view *v, uint64_t values,
			       size_t max, bool numbered, uint64_t **kv,
			       size_t *n)
{
	enum pyd_err err = PYD_OK;
	*kv = NULL;
	*n = 0;
	size_t want = v->nentries < max ? v->nentries : max;
	size_t chunk = want * 2 > CHUNK_MIN ? want * 2 : CHUNK_MIN;
	if (chunk > v->nentries)
		chunk = v->nentries;
	if (!want)
		return PYD_OK;
	uint8_t *ents = malloc(chunk * v->entry_size);
	uint64_t *vals = values ? malloc(chunk * 8) : NULL;
	uint64_t *out = malloc(want * 16);
	if (!ents || !out || (values && !vals)) {
		err = PYD_E_NOMEM;
		goto done;
	}
	for (size_t at = 0; at < v->nentries && *n < want; at += chunk) {
		size_t k = v->nentries - at < chunk ? v->nentries - at : chunk;
		if ((err = rd(s, v->entries + at * v->entry_size, ents,
			      k * v->entry_size)) ||
		    (values && (err = rd(s, values + at * 8, vals, k * 8))))
			goto done;
		for (size_t i = 0; i < k && *n < want; i++) {
			const uint8_t *e = ents + i * v->entry_size;
			uint64_t key = pyd_u64_at(e, (int32_t)v->key_off);
			uint64_t val = numbered ? at + i
				       : values ? vals[i]
						: pyd_u64_at(e, (int32_t)v->key_off + 8);
			if (!key || (!val && !numbered))
				continue;
			out[2 * *n] = key;
			out[2 * *n + 1] = val;
			(*n)++;
		}
	}
	*kv = out;
	out = NULL;
done:
	free(ents);
	free(vals);
	free(out);
	return err;
}

/* view_items of the table at keys. */
static enum pyd_err keys_items(struct pyd_session *s, uint64_t keys,
			       uint64_t values, size_t max, uint64_t **kv,
			       size_t *n)
{
	struct keys_view v;
	*kv = NULL;
	*n = 0;
	enum pyd_err err = keys_view(s, keys, &v);
	return err ? err : view_items(s, &v, values, max, false, kv, n);
}

static uint64_t values_array(struct pyd_session *s, uint64_t values)
{
	/* <= 3.10: ma_values is the array itself. */
	int32_t off = OT(s)->dv_values;
	return values ? values + (uint64_t)(off > 0 ? off : 0) : 0;
}

enum pyd_err pyd_dict_items(struct pyd_session *s, uint64_t dict, size_t max,
			    uint64_t **kv, size_t *n, size_t *used)
{
	const struct py_objects *o = OT(s);
	uint8_t hdr[64];
	*kv = NULL;
	*n = 0;
	if (!o->valid || (size_t)o->ma_values + 8 > sizeof hdr)
		return PYD_E_UNSUPPORTED;
	enum pyd_err err = rd(s, dict, hdr, (size_t)o->ma_values + 8);
	if (err)
		return err;
	uint64_t keys = pyd_u64_at(hdr, o->ma_keys);
	uint64_t values = pyd_u64_at(hdr, o->ma_values);
	if (used)
		*used = (size_t)pyd_u64_at(hdr, o->ma_used);
	return keys_items(s, keys, values_array(s, values), max, kv, n);
}

/* Keys read in one batch, and the bytes of one: a compact ASCII str's
 * head and as many characters as the key looked for has. */
#define KEY_BATCH 64
#define KEY_BYTES 128

/* Whether the head and characters of a str, read into b, are key's:
 * 1 yes, 0 no, -1 not a compact ASCII str (then compare it by reading). */
static int key_is(const struct py_layout *L, const uint8_t *b, const char *key,
		  size_t len)
{
	uint32_t state;
	memcpy(&state, b + L->unicode.state, sizeof state);
	struct pyd_str_state st = pyd_str_state_decode(state, L->unicode.kind_bit);
	if (pyd_u64_at(b, L->unicode.length) != len)
		return 0;
	if (!st.compact || !st.ascii)
		return -1;
	return !memcmp(b + L->unicode.ascii_size, key, len);
}

/*
 * The index of the first of the n keys of kv that is the str key, or n.
 * The keys of a batch are read in one go, each its head and the key's
 * length of characters: sys.modules' keys lie on as many pages as there
 * are modules, a read each, one by one.
 */
static size_t find_key(struct pyd_session *s, const uint64_t *kv, size_t n,
		       const char *key)
{
	const struct py_layout *L = &s->layout;
	size_t len = strlen(key), each = (size_t)L->unicode.ascii_size + len;
	uint8_t (*b)[KEY_BYTES] = NULL;
	struct pyd_iov v[KEY_BATCH];
	if (each <= KEY_BYTES) /* the head holds the length and the state */
		b = malloc(KEY_BATCH * sizeof *b);
	for (size_t at = 0; at < n; at += KEY_BATCH) {
		size_t k = n - at < KEY_BATCH ? n - at : KEY_BATCH, done = 0;
		for (size_t i = 0; b && i < k; i++)
			v[i] = (struct pyd_iov){kv[2 * (at + i)], b[i], each};
		if (b && pyd_readv(s->src, v, k, &done) == PYD_E_EXITED)
			break;
		for (size_t i = 0; i < k; i++) {
			int is = i < done ? key_is(L, b[i], key, len) : -1;
			if (is == 1 || (is < 0 && pyd_str_eq(s, kv[2 * (at + i)], key))) {
				free(b);
				return at + i;
			}
		}
	}
	free(b);
	return n;
}

static struct pyd_key_slot *key_slot(struct pyd_session *s, uint64_t owner,
				     const char *key)
{
	uint64_t h = owner * 0x9E3779B97F4A7C15ULL;
	for (const char *c = key; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	return &s->keys[h % PYD_KEY_CACHE];
}

/* Remember key's place in owner's table (index, and entry if set), if its
 * name fits the slot. */
static void key_found(struct pyd_key_slot *e, uint64_t owner,
		      const char *key, uint64_t found, size_t index,
		      uint64_t entry)
{
	size_t len = strlen(key);
	if (len >= sizeof e->name)
		return;
	*e = (struct pyd_key_slot){owner, found, index, entry, ""};
	memcpy(e->name, key, len + 1);
}

/*
 * Comparing a key costs a read, so where a key was found is remembered:
 * while the same key object sits at the same place of the same table
 * (the table holds a reference, so it is still that string), the answer
 * needs no reads.  A sampler asks for the same few keys every round.
 */
enum pyd_err pyd_kv_find(struct pyd_session *s, uint64_t owner,
			 const uint64_t *kv, size_t n, const char *key,
			 uint64_t *val)
{
	struct pyd_key_slot *e = key_slot(s, owner, key);
	*val = 0;
	if (e->owner == owner && !e->entry && !strcmp(e->name, key) &&
	    e->index < n && kv[2 * e->index] == e->key) {
		*val = kv[2 * e->index + 1];
		return PYD_OK;
	}
	size_t i = find_key(s, kv, n, key);
	if (i < n) {
		*val = kv[2 * i + 1];
		key_found(e, owner, key, kv[2 * i], i, 0);
	}
	return PYD_OK;
}

/*
 * An attribute of split values (values[i] is the value of entry i of the
 * type's cached keys).  Every instance of a class shares those keys, and
 * a shared table only grows: a key keeps its entry while the table lives.
 * So where a key was found is kept, and while that entry still holds the
 * same key object, an instance's attribute costs two words' reads, not
 * the table's (a Thread's _name, for each of a hundred threads, every
 * pass of their read-ahead).
 */
static enum pyd_err split_get(struct pyd_session *s, uint64_t keys,
			      uint64_t values, const char *key, uint64_t *val)
{
	struct pyd_key_slot *e = key_slot(s, keys, key);
	uint64_t now;
	*val = 0;
	if (e->owner == keys && e->entry && !strcmp(e->name, key)) {
		enum pyd_err err = pyd_read_ptr(s, e->entry, &now);
		if (err || now == e->key)
			return err ? err
				   : pyd_read_ptr(s, values + 8 * e->index, val);
	}
	uint64_t *kv = NULL;
	size_t n = 0;
	struct keys_view v;
	enum pyd_err err = keys_view(s, keys, &v);
	if (!err)
		err = view_items(s, &v, 0, PYD_MAX_ITEMS, true, &kv, &n);
	size_t i = err ? n : find_key(s, kv, n, key);
	if (i < n) {
		size_t at = (size_t)kv[2 * i + 1];
		key_found(e, keys, key, kv[2 * i], at,
			  v.entries + at * v.entry_size + v.key_off);
		err = pyd_read_ptr(s, values + 8 * at, val);
	}
	free(kv);
	return err;
}

enum pyd_err pyd_dict_get(struct pyd_session *s, uint64_t dict,
			  const char *key, uint64_t *val)
{
	uint64_t *kv;
	size_t n;
	*val = 0;
	enum pyd_err err = pyd_dict_items(s, dict, PYD_MAX_ITEMS, &kv, &n, NULL);
	if (!err)
		err = pyd_kv_find(s, dict, kv, n, key, val);
	free(kv);
	return err;
}

/* Where an instance keeps its attributes: a dict, or split values (whose
 * keys are its type's cached keys); both 0 if it has none. */
static enum pyd_err attr_home(struct pyd_session *s, uint64_t obj,
			      uint64_t *type, uint64_t *dict, uint64_t *values)
{
	const struct py_objects *o = OT(s);
	uint64_t flags;
	*dict = *values = 0;
	if (!o->valid)
		return PYD_E_UNSUPPORTED;
	enum pyd_err err = pyd_obj_type(s, obj, type);
	if (err || (err = pyd_read_ptr(s, *type + (uint64_t)s->layout.object.tp_flags, &flags)))
		return err;
	bool managed = (flags & TPFLAGS_MANAGED_DICT) != 0;
	uint64_t at = (uint64_t)o->managed_dict;
	switch (o->obj_dict) {
	case PY_DICT_OFFSET:
		managed = false;
		break;
	case PY_DICT_MANAGED_311:
		if (managed && ((err = pyd_read_ptr(s, obj - at, dict)) ||
				(!*dict && (err = pyd_read_ptr(s, obj - at - 8, values)))))
			return err;
		*values = values_array(s, *values);
		break;
	case PY_DICT_MANAGED_312: {
		uint64_t dv = 0;
		if (managed && (err = pyd_read_ptr(s, obj - at, &dv)))
			return err;
		if (dv & 1) /* stored as (char *)values - 1 */
			*values = values_array(s, dv + 1);
		else
			*dict = dv;
		break;
	}
	case PY_DICT_INLINE_313:
		if (managed && (err = pyd_read_ptr(s, obj - at, dict)))
			return err;
		if (!*dict && (flags & TPFLAGS_INLINE_VALUES)) {
			uint64_t basic;
			uint8_t hdr[4];
			if ((err = pyd_read_ptr(s, *type + (uint64_t)o->tp_basicsize,
						&basic)) ||
			    basic > (1u << 20) ||
			    (err = rd(s, obj + basic, hdr, sizeof hdr)))
				return err;
			if (hdr[3]) /* valid */
				*values = obj + basic + (uint64_t)o->dv_values;
		}
		managed = true;
		break;
	}
	if (managed)
		return PYD_OK;
	int64_t off;
	if ((err = pyd_read_ptr(s, *type + (uint64_t)o->tp_dictoffset,
				(uint64_t *)&off)))
		return err;
	if (off <= 0 || off > (1 << 20))
		return PYD_OK; /* no dict (or a var-sized one: not ours) */
	return pyd_read_ptr(s, obj + (uint64_t)off, dict);
}

/* Where an instance's attributes are: its dict, or its split values and
 * the keys table of its type they go with (all 0: it has none). */
static enum pyd_err attr_tables(struct pyd_session *s, uint64_t obj,
				uint64_t *dict, uint64_t *keys,
				uint64_t *values)
{
	uint64_t type;
	*keys = 0;
	enum pyd_err err = attr_home(s, obj, &type, dict, values);
	if (err || *dict || !*values)
		return err;
	return pyd_read_ptr(s, type + (uint64_t)OT(s)->ht_cached_keys, keys);
}

enum pyd_err pyd_obj_attrs(struct pyd_session *s, uint64_t obj, size_t max,
			   uint64_t *owner, uint64_t **kv, size_t *n)
{
	uint64_t dict, keys, values;
	*owner = 0;
	*kv = NULL;
	*n = 0;
	enum pyd_err err = attr_tables(s, obj, &dict, &keys, &values);
	if (err || dict)
		return err ? err : pyd_dict_items(s, *owner = dict, max, kv, n, NULL);
	if (!keys)
		return PYD_OK;
	return keys_items(s, *owner = keys, values, max, kv, n);
}

enum pyd_err pyd_obj_attr(struct pyd_session *s, uint64_t obj,
			  const char *key, uint64_t *val)
{
	uint64_t dict, keys, values;
	*val = 0;
	enum pyd_err err = attr_tables(s, obj, &dict, &keys, &values);
	if (err || dict)
		return err ? err : pyd_dict_get(s, dict, key, val);
	return keys ? split_get(s, keys, values, key, val) : PYD_OK;
}

/* ---- sets, sequences, ints, weakrefs --------------------------------- */

enum pyd_err pyd_set_items(struct pyd_session *s, uint64_t set, size_t max,
			   uint64_t **keys, size_t *n, size_t *used)
{
	const struct py_layout *L = &s->layout;
	int32_t hi = L->set.used;
	if (L->set.mask > hi)
		hi = L->set.mask;
	if (L->set.table > hi)
		hi = L->set.table;
	uint8_t hdr[256];
	*keys = NULL;
	*n = 0;
	if (hi < 0 || (size_t)hi + 8 > sizeof hdr)
		return PYD_E_READ;
	enum pyd_err err = rd(s, set, hdr, (size_t)hi + 8);
	if (err)
		return err;
	int64_t nused = (int64_t)pyd_u64_at(hdr, (uint64_t)L->set.used);
	int64_t mask = (int64_t)pyd_u64_at(hdr, (uint64_t)L->set.mask);
	uint64_t table = pyd_u64_at(hdr, (uint64_t)L->set.table);
	if (mask < 0 || (uint64_t)mask + 1 > PYD_MAX_ITEMS ||
	    ((uint64_t)mask & ((uint64_t)mask + 1)) || nused < 0 ||
	    nused > mask + 1)
		return PYD_E_READ;
	if (used)
		*used = (size_t)nused;
	size_t slots = (size_t)mask + 1;
	size_t want = (size_t)nused < max ? (size_t)nused : max;
	/* A set is at most 60% full: twice the keys wanted, in slots. */
	size_t chunk = want * 4 > CHUNK_MIN ? want * 4 : CHUNK_MIN;
	if (chunk > slots)
		chunk = slots;
	uint8_t *t = malloc(chunk * 16);
	uint64_t *out = malloc((want ? want : 1) * 8);
	if (!t || !out) {
		free(t);
		free(out);
		return PYD_E_NOMEM;
	}
	/* setentry {key, hash}: NULL key free, hash -1 the dummy of a
	 * deleted entry. */
	for (size_t at = 0; at < slots && *n < want; at += chunk) {
		if ((err = rd(s, table + at * 16, t, chunk * 16))) {
			free(t);
			free(out);
			*n = 0;
			return err;
		}
		for (size_t i = 0; i < chunk && *n < want; i++) {
			uint64_t key = pyd_u64_at(t, (int32_t)(i * 16));
			int64_t hash = (int64_t)pyd_u64_at(t, (int32_t)(i * 16 + 8));
			if (key && hash != -1)
				out[(*n)++] = key;
		}
	}
	free(t);
	*keys = out;
	return PYD_OK;
}

enum pyd_err pyd_seq_items(struct pyd_session *s, uint64_t seq, bool is_list,
			   size_t max, uint64_t **items, size_t *n,
			   size_t *size)
{
	const struct py_objects *o = OT(s);
	int64_t len;
	uint64_t base;
	*items = NULL;
	*n = 0;
	enum pyd_err err = rd(s, seq + (uint64_t)o->seq_size, &len, sizeof len);
	if (err)
		return err;
	if (len < 0 || len > (int64_t)PYD_MAX_ITEMS)
		return PYD_E_READ;
	if (size)
		*size = (size_t)len;
	size_t want = (size_t)len < max ? (size_t)len : max;
	if (!want)
		return PYD_OK;
	if (is_list) {
		if ((err = pyd_read_ptr(s, seq + (uint64_t)o->list_items, &base)))
			return err;
	} else {
		base = seq + (uint64_t)o->tuple_items;
	}
	uint64_t *out = malloc(want * 8);
	if (!out)
		return PYD_E_NOMEM;
	if ((err = rd(s, base, out, want * 8))) {
		free(out);
		return err;
	}
	*items = out;
	*n = want;
	return PYD_OK;
}

/* A short compact ASCII str that is all in buf (one read instead of
 * pyd_read_str's two: names are read once per task); NULL if it is not. */
char *pyd_short_ascii(const struct py_layout *L, const uint8_t *buf,
		      size_t got)
{
	uint32_t state;
	if ((size_t)L->unicode.ascii_size > got ||
	    (size_t)L->unicode.state + 4 > got)
		return NULL;
	memcpy(&state, buf + L->unicode.state, sizeof state);
	struct pyd_str_state st = pyd_str_state_decode(state, L->unicode.kind_bit);
	int64_t len = (int64_t)pyd_u64_at(buf, (uint64_t)L->unicode.length);
	if (!st.compact || !st.ascii || st.kind != 1 || len < 0 ||
	    (uint64_t)len > got - (size_t)L->unicode.ascii_size)
		return NULL;
	char *out = malloc((size_t)len + 1);
	if (!out)
		return NULL;
	memcpy(out, buf + L->unicode.ascii_size, (size_t)len);
	out[len] = 0;
	/* ASCII means < 0x80, but the bytes are the target's: check. */
	for (int64_t i = 0; i < len; i++)
		if ((unsigned char)out[i] >= 0x80 || !out[i]) {
			free(out);
			return NULL;
		}
	return out;
}

enum pyd_err pyd_tuple_item(struct pyd_session *s, uint64_t tuple,
			    size_t i, uint64_t *item)
{
	const struct py_objects *o = OT(s);
	int64_t len;
	enum pyd_err err = rd(s, tuple + (uint64_t)o->seq_size, &len, sizeof len);
	if (err)
		return err;
	if (len < 0 || (uint64_t)len <= i)
		return PYD_E_READ;
	return pyd_read_ptr(s, tuple + (uint64_t)o->tuple_items + 8 * i, item);
}

/* Sign and digit count from an int's ob_size / lv_tag; false if bad. */
static bool long_header(const struct py_layout *L, int64_t size, bool *neg,
			uint64_t *ndigits)
{
	if (L->pylong.tagged) {
		/* lv_tag = ndigits << 3 | sign (0 positive, 1 zero, 2 neg) */
		if ((size & 3) == 3)
			return false;
		*neg = (size & 3) == 2;
		*ndigits = (uint64_t)size >> 3;
	} else {
		*neg = size < 0;
		/* negated unsigned: a size of INT64_MIN (garbage) must not
		 * overflow */
		*ndigits = *neg ? 0 - (uint64_t)size : (uint64_t)size;
	}
	return true;
}

enum pyd_err pyd_long_header(struct pyd_session *s, uint64_t obj, bool *neg,
			     uint64_t *ndigits)
{
	int64_t size;
	enum pyd_err err =
	    rd(s, obj + (uint64_t)s->layout.pylong.size, &size, sizeof size);
	if (err)
		return err;
	return long_header(&s->layout, size, neg, ndigits) ? PYD_OK
							   : PYD_E_READ;
}

static int64_t long_digits(const uint8_t *d, uint64_t ndigits, bool neg)
{
	uint64_t val = 0;
	for (uint64_t i = ndigits; i-- > 0;) {
		uint32_t digit;
		memcpy(&digit, d + 4 * i, sizeof digit);
		val = (val << 30) | (digit & 0x3fffffff);
	}
	return neg ? (int64_t)(0 - val) : (int64_t)val; /* no signed overflow */
}

bool pyd_long_decode(const struct py_layout *L, const uint8_t *buf,
		     size_t len, int64_t *v)
{
	bool neg;
	uint64_t ndigits;
	if ((size_t)L->pylong.size + 8 > len ||
	    !long_header(L, (int64_t)pyd_u64_at(buf, (uint64_t)L->pylong.size),
			 &neg, &ndigits) ||
	    ndigits > 3 || (size_t)L->pylong.digit + 4 * ndigits > len)
		return false;
	*v = long_digits(buf + L->pylong.digit, ndigits, neg);
	return true;
}

enum pyd_err pyd_long_value(struct pyd_session *s, uint64_t obj, int64_t *v)
{
	bool neg;
	uint64_t ndigits;
	uint8_t d[12];
	*v = 0;
	enum pyd_err err = pyd_long_header(s, obj, &neg, &ndigits);
	if (err)
		return err;
	if (ndigits > 3)
		return PYD_E_READ; /* past 90 bits: none we need */
	if (ndigits && (err = rd(s, obj + (uint64_t)s->layout.pylong.digit, d,
				 ndigits * 4)))
		return err;
	*v = long_digits(d, ndigits, neg);
	return PYD_OK;
}

enum pyd_err pyd_weakref_get(struct pyd_session *s, uint64_t ref,
			     uint64_t *obj)
{
	return pyd_read_ptr(s, ref + (uint64_t)OT(s)->wr_object, obj);
}

enum pyd_err pyd_module_dict(struct pyd_session *s, uint64_t interp,
			     const char *name, uint64_t *md)
{
	uint64_t modules, mod;
	enum pyd_err err;
	*md = 0;
	if ((err = pyd_read_ptr(s, interp + (uint64_t)s->layout.objects.interp_modules,
				&modules)) ||
	    !modules || (err = pyd_dict_get(s, modules, name, &mod)) || !mod)
		return err;
	return pyd_read_ptr(s, mod + pyd_obj_head(&s->layout), md);
}
