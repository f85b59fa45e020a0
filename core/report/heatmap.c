/*
 * A heat map of source lines: one self-contained HTML page (the template
 * core/report/heatmap.html) listing every sampled file, hottest first,
 * with each line's samples: own (the line was running) and total (the
 * line was on the stack, each sample once however deep the recursion).
 * The text of the lines comes from the caller's source_line; a file it
 * cannot give still lists its lines with their counts.
 *
 * The data (docs/profile-formats.md): meta, then files as {file, own,
 * total, text (array of lines, or null), lines: [[line, own, total,
 * [function, ...]], ...]}.
 */
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "profiles.h"
#include "heatmap_html.h"
#include "report.h"

/* Lines of text asked for per file: past it a file is cut short. */
#define MAX_TEXT_LINES 100000

/* A counted place: a file, or a line of one. */
struct spot {
	uint64_t own, total;
	unsigned onpath; /* on the current path: total counts it once */
};

/* A Python frame by where it is. */
struct place {
	const char *file;
	int line;
	uint32_t frame;
};

struct heat {
	const struct pyd_profile *p;
	struct place *order; /* Python frames with a file, by place */
	size_t norder;
	uint32_t *line_of; /* frame -> line spot, PYD_PROF_NONE: no line */
	uint32_t *file_of; /* frame -> file spot, PYD_PROF_NONE: no file */
	struct spot *lines, *files;
	size_t nlines, nfiles;
};

static int by_place(const void *a, const void *b)
{
	const struct place *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Places compare by content: frames of one file need not share its
 * string (a profile read back, merged). */
static bool number_places(struct heat *h)
{
	const struct pyd_profile *p = h->p;
	size_t nf = p->nframes ? p->nframes : 1;
	h->order = malloc(nf * sizeof *h->order);
	h->line_of = malloc(nf * sizeof *h->line_of);
	h->file_of = malloc(nf * sizeof *h->file_of);
	if (!h->order || !h->line_of || !h->file_of)
		return false;
	for (uint32_t i = 0; i < p->nframes; i++) {
		const struct pyd_prof_frame *f = &p->frames[i];
		h->line_of[i] = h->file_of[i] = PYD_PROF_NONE;
		if (f->kind == PYD_PF_PYTHON && f->file)
			h->order[h->norder++] = (struct place){f->file, f->line, i};
	}
	if (h->norder) /* qsort's array may not be NULL, even empty */
		qsort(h->order, h->norder, sizeof *h->order, by_place);
	for (size_t i = 0; i < h->norder; i++) {
		const struct place *pl = &h->order[i], *prev = i ? pl - 1 : NULL;
		h->nfiles += !prev || strcmp(pl->file, prev->file);
		h->file_of[pl->frame] = (uint32_t)h->nfiles - 1;
		if (pl->line <= 0)
			continue;
		h->nlines += !prev || by_place(pl, prev);
		h->line_of[pl->frame] = (uint32_t)h->nlines - 1;
	}
	h->lines = calloc(h->nlines + 1, sizeof *h->lines);
	h->files = calloc(h->nfiles + 1, sizeof *h->files);
	return h->lines && h->files;
}

static void enter(struct spot *s, const struct pyd_prof_node *n)
{
	s->own += n->self;
	if (s->onpath++ == 0)
		s->total += n->total;
}

/* Each node's samples to its line and file, as the table counts
 * functions (pyd_prof_functions). */
static bool count(struct heat *h)
{
	const struct pyd_profile *p = h->p;
	uint32_t *path = NULL; /* frames on the path, PYD_PROF_NONE: none */
	size_t len = 0, cap = 0;
	struct pyd_prof_walk w;
	uint32_t n;
	for (pyd_prof_walk_start(&w, p, 0); pyd_prof_walk_next(&w, &n);) {
		for (; len >= w.depth; len--) {
			uint32_t f = path[len - 1];
			if (f != PYD_PROF_NONE && h->file_of[f] != PYD_PROF_NONE)
				h->files[h->file_of[f]].onpath--;
			if (f != PYD_PROF_NONE && h->line_of[f] != PYD_PROF_NONE)
				h->lines[h->line_of[f]].onpath--;
		}
		if (!pyd_grow((void **)&path, &cap, len + 1, sizeof *path)) {
			free(path);
			return false;
		}
		uint32_t f = path[len++] = p->nodes[n].frame;
		if (f != PYD_PROF_NONE && h->file_of[f] != PYD_PROF_NONE)
			enter(&h->files[h->file_of[f]], &p->nodes[n]);
		if (f != PYD_PROF_NONE && h->line_of[f] != PYD_PROF_NONE)
			enter(&h->lines[h->line_of[f]], &p->nodes[n]);
	}
	free(path);
	return true;
}

/* ---- the page's data ---- */

struct file_rank {
	size_t first; /* its first place in order */
	const struct spot *s;
};

static int hotter(const void *a, const void *b)
{
	const struct spot *x = ((const struct file_rank *)a)->s,
	                  *y = ((const struct file_rank *)b)->s;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return (x->own < y->own) - (x->own > y->own);
}

/* The functions of the frames order[from, to) of one line, each once. */
static void functions_json(struct pyd_buf *b, const struct heat *h,
                           size_t from, size_t to)
{
	PUT(b, "[");
	for (size_t i = from; i < to; i++) {
		const struct pyd_prof_frame *f =
		    &h->p->frames[h->order[i].frame];
		const char *name = f->qualname ? f->qualname : f->function;
		bool seen = false;
		for (size_t k = from; k < i && !seen; k++) {
			const struct pyd_prof_frame *g =
			    &h->p->frames[h->order[k].frame];
			seen = !strcmp(g->qualname ? g->qualname : g->function,
			               name);
		}
		if (seen)
			continue;
		if (i > from)
			PUT(b, ", ");
		pyd_buf_json_str(b, name);
	}
	PUT(b, "]");
}

/* The file's counted lines from order[i], as [line, own, total,
 * functions]. */
static void lines_json(struct pyd_buf *b, const struct heat *h, size_t i)
{
	uint32_t file = h->file_of[h->order[i].frame];
	const char *sep = "\n";
	PUT(b, ", \"lines\": [");
	while (i < h->norder && h->file_of[h->order[i].frame] == file) {
		size_t j = i + 1;
		uint32_t line = h->line_of[h->order[i].frame];
		while (j < h->norder && h->line_of[h->order[j].frame] == line &&
		       h->file_of[h->order[j].frame] == file)
			j++;
		if (line != PYD_PROF_NONE && h->lines[line].total) {
			pyd_buf_printf(b, "%s[%d, %llu, %llu, ", sep,
			               h->order[i].line,
			               (unsigned long long)h->lines[line].own,
			               (unsigned long long)h->lines[line].total);
			functions_json(b, h, i, j);
			PUT(b, "]");
			sep = ",\n";
		}
		i = j;
	}
	PUT(b, "]");
}

/* The file's text, from line 1 to its end; null if the caller cannot
 * read it. */
static void text_json(struct pyd_buf *b, const char *file,
                      const struct pyd_prof_opts *o)
{
	const char *line = o->source_line
	                       ? o->source_line(o->source_ctx, file, 1)
	                       : NULL;
	PUT(b, ", \"text\": ");
	if (!line) {
		PUT(b, "null");
		return;
	}
	PUT(b, "[");
	for (int n = 1; n <= MAX_TEXT_LINES; n++) {
		if (n > 1 && !(line = o->source_line(o->source_ctx, file, n)))
			break;
		if (n > 1)
			PUT(b, ",\n");
		pyd_buf_json_str(b, line);
	}
	PUT(b, "]");
}

static void file_json(struct pyd_buf *b, const struct heat *h,
                      const struct file_rank *r,
                      const struct pyd_prof_opts *o)
{
	const char *name = h->order[r->first].file;
	PUT(b, "{\"file\": ");
	pyd_buf_json_str(b, name);
	pyd_buf_printf(b, ", \"own\": %llu, \"total\": %llu",
	               (unsigned long long)r->s->own,
	               (unsigned long long)r->s->total);
	lines_json(b, h, r->first);
	text_json(b, name, o);
	PUT(b, "}");
}

static void meta_json(struct pyd_buf *b, const struct pyd_profile *p)
{
	const struct pyd_prof_meta *m = &p->meta;
	pyd_buf_printf(b, "{\"meta\": {\"pid\": %d, \"python\": ", m->pid);
	pyd_buf_json_str(b, m->python_version);
	pyd_buf_printf(b,
	               ", \"mode\": \"%s\", \"samples\": %llu, "
	               "\"duration\": %.6g, \"interval\": %.6g, "
	               "\"lines\": %s, \"version\": \"%s\"},\n",
	               pyd_sample_mode_name(m->mode),
	               (unsigned long long)(p->nnodes ? p->nodes[0].total : 0),
	               m->duration_s, m->interval_s,
	               p->lines ? "true" : "false", PYD_VERSION);
}

static bool data_json(struct pyd_buf *b, const struct heat *h,
                      const struct pyd_prof_opts *o)
{
	struct file_rank *rank = malloc((h->nfiles + 1) * sizeof *rank);
	if (!rank)
		return false;
	size_t n = 0;
	for (size_t i = 0; i < h->norder; i++) {
		uint32_t file = h->file_of[h->order[i].frame];
		if (!i || file != h->file_of[h->order[i - 1].frame])
			rank[n++] = (struct file_rank){i, &h->files[file]};
	}
	if (n) /* qsort's array may not be NULL, even empty */
		qsort(rank, n, sizeof *rank, hotter);
	meta_json(b, h->p);
	PUT(b, "\"files\": [");
	for (size_t i = 0; i < n && rank[i].s->total; i++) {
		if (i)
			PUT(b, ",\n");
		file_json(b, h, &rank[i], o);
	}
	PUT(b, "]}");
	free(rank);
	return true;
}

void pyd_report_prof_heatmap(struct pyd_buf *b, const struct pyd_profile *p,
                             const struct pyd_prof_opts *o)
{
	struct heat h = {.p = p};
	struct pyd_buf data = {0};
	if (!number_places(&h) || !count(&h) || !data_json(&data, &h, o))
		data.failed = true;
	pyd_prof_page(b, (const char *)heatmap_html, &data);
	pyd_buf_free(&data);
	free(h.order);
	free(h.line_of);
	free(h.file_of);
	free(h.lines);
	free(h.files);
}
