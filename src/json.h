/*
 * json.h - a small streaming JSON writer for the reports (internal).
 *
 * Calls nest like the document: json_begin_object / json_key / values /
 * json_end_object.  Commas and indentation are handled here; strings are
 * escaped, invalid UTF-8 becomes U+FFFD, non-finite numbers become null.
 */
#ifndef GGUFMAP_JSON_H
#define GGUFMAP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct json {
    FILE *out;
    int depth;
    bool first[64];   /* no element written yet at this depth */
    bool after_key;
    int inline_from;  /* depths at or above this one are written on one line (0: none) */
} json;

void json_init(json *j, FILE *out);
void json_begin_object(json *j);
void json_end_object(json *j);
void json_begin_array(json *j);
/* An object written on one line with everything in it: {"a": 1, "b": [2]}
 * (one record a line, for readers that take a line at a time). */
void json_begin_object_inline(json *j);
void json_end_array(json *j);
void json_key(json *j, const char *key);
void json_string_n(json *j, const char *s, size_t len);
void json_string(json *j, const char *s);
void json_int(json *j, int64_t v);
void json_uint(json *j, uint64_t v);
void json_double(json *j, double v);
/* A float32 value, printed with the 9 digits that identify it. */
void json_float(json *j, float v);
void json_bool(json *j, bool v);
void json_null(json *j);
/* Ends the document with a newline. */
void json_finish(json *j);

#endif
