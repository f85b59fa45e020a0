/*
 * The readers of saved profiles (read.c's table): each turns a whole
 * file's text into a finished profile.  Internal to core/report.
 */
#ifndef PYD_REPORT_READ_H
#define PYD_REPORT_READ_H

#include <stdarg.h>
#include <stddef.h>

#include "profiles.h"

/* text is a NUL-terminated copy of the file, len bytes, which the reader
 * may cut into strings in place (the profile copies what it keeps).
 * PYD_E_PROFILE with why in detail if it is not a profile of its kind. */
typedef enum pyd_err (*pyd_prof_reader)(char *text, size_t len,
                                        struct pyd_profile **out,
                                        char *detail, size_t detailsz);

/* Why a file is not a profile, into detail: "WHERE AT: " then fmt. */
void pyd_read_why(char *detail, size_t detailsz, const char *where,
                  size_t at, const char *fmt, va_list ap);

enum pyd_err pyd_read_prof_json(char *text, size_t len,
                                struct pyd_profile **out, char *detail,
                                size_t detailsz);
/* A recording, whole (core/report/recording.c): a recording cut short
 * gives the samples before the cut; a corrupt one is PYD_E_PROFILE. */
enum pyd_err pyd_read_prof_raw(char *text, size_t len,
                               struct pyd_profile **out, char *detail,
                               size_t detailsz);
enum pyd_err pyd_read_prof_collapsed(char *text, size_t len,
                                     struct pyd_profile **out, char *detail,
                                     size_t detailsz);

#endif
