#include "source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/grow.h"
#include "../core/memsrc/memsrc.h"

/* Files larger than this are not shown; nobody reads such a source. */
#define MAX_SOURCE (16u << 20)
#define MAX_FILES 64

struct source_file {
	char *name;
	char *text;   /* NULL if unreadable */
	char **lines; /* pointers into text, NUL-terminated lines */
	size_t nlines;
};

struct source_cache {
	char *root;
	struct source_file files[MAX_FILES];
	size_t nfiles;
};

struct source_cache *source_cache_new(const char *root)
{
	struct source_cache *c = calloc(1, sizeof *c);
	if (c && root)
		c->root = strdup(root);
	return c;
}

/* The target names its source files: one may be a FIFO or a device
 * (pyd_open_regular opens neither), or grow while it is read (the size
 * read is what fstat said). */
static char *slurp(const char *path)
{
	struct stat st;
	int fd = pyd_open_regular(path);
	if (fd < 0)
		return NULL;
	size_t size = fstat(fd, &st) == 0 && st.st_size > 0
			      ? (size_t)st.st_size
			      : 0;
	if (size > MAX_SOURCE)
		size = MAX_SOURCE;
	char *buf = malloc(size + 1);
	size_t n = 0;
	while (buf && n < size) {
		ssize_t got = read(fd, buf + n, size - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (buf)
		buf[n] = 0;
	return buf;
}

static void split_lines(struct source_file *sf)
{
	size_t cap = 0;
	for (char *p = sf->text; p && *p;) {
		if (!pyd_grow_from((void **)&sf->lines, &cap, sf->nlines + 1,
		                   sizeof *sf->lines, 256))
			return;
		sf->lines[sf->nlines++] = p;
		char *nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = 0;
		if (nl > p && nl[-1] == '\r')
			nl[-1] = 0;
		p = nl + 1;
	}
}

static struct source_file *load(struct source_cache *c, const char *file)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].name, file) == 0)
			return &c->files[i];
	if (c->nfiles == MAX_FILES || file[0] != '/')
		return NULL;
	struct source_file *sf = &c->files[c->nfiles++];
	sf->name = strdup(file);
	char path[8192];
	snprintf(path, sizeof path, "%s%s", c->root ? c->root : "", file);
	sf->text = slurp(path);
	split_lines(sf);
	return sf;
}

const char *source_cache_line(void *cache, const char *file, int line)
{
	struct source_cache *c = cache;
	struct source_file *sf = c ? load(c, file) : NULL;
	if (!sf || !sf->name || line < 1 || (size_t)line > sf->nlines)
		return NULL;
	return sf->lines[line - 1];
}

void source_cache_free(struct source_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nfiles; i++) {
		free(c->files[i].name);
		free(c->files[i].text);
		free(c->files[i].lines);
	}
	free(c->root);
	free(c);
}
