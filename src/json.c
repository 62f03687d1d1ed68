/*
 * json.c - the streaming JSON writer (see json.h).
 */
#include <math.h>
#include <string.h>

#include "json.h"

void json_init(json *j, FILE *out) {
    memset(j, 0, sizeof *j);
    j->out = out;
    j->first[0] = true;
}

static void indent(json *j) {
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->out);
}

static bool on_one_line(const json *j) { return j->inline_from > 0 && j->depth >= j->inline_from; }

/* Separator before a value or a key at the current depth. */
static void before(json *j) {
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        if (!j->first[j->depth]) fputs(on_one_line(j) ? ", " : ",", j->out);
        if (!on_one_line(j)) indent(j);
    }
    j->first[j->depth] = false;
}

static void open_container(json *j, char c) {
    before(j);
    fputc(c, j->out);
    if (j->depth < 63) j->depth++;
    j->first[j->depth] = true;
}

static void close_container(json *j, char c) {
    bool empty = j->first[j->depth], one_line = on_one_line(j);
    if (j->depth > 0) j->depth--;
    if (j->inline_from > j->depth) j->inline_from = 0; /* the one-line object ends here */
    if (!empty && !one_line) indent(j);
    fputc(c, j->out);
}

void json_begin_object_inline(json *j) {
    open_container(j, '{');
    if (!j->inline_from) j->inline_from = j->depth;
}

void json_begin_object(json *j) { open_container(j, '{'); }
void json_end_object(json *j) { close_container(j, '}'); }
void json_begin_array(json *j) { open_container(j, '['); }
void json_end_array(json *j) { close_container(j, ']'); }

static void put_escaped(json *j, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', j->out);
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', j->out);
            fputc((int)c, j->out);
            i++;
        } else if (c < 0x20) {
            fprintf(j->out, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            size_t run = 1; /* a run of plain ASCII goes out in one write */
            while (i + run < len && p[i + run] >= 0x20 && p[i + run] < 0x80 && p[i + run] != '"' && p[i + run] != '\\')
                run++;
            fwrite(p + i, 1, run, j->out);
            i += run;
        } else {
            /* Copy a well-formed UTF-8 sequence, else write U+FFFD for one byte. */
            size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
            bool ok = n > 0 && i + n <= len;
            for (size_t k = 1; ok && k < n; k++) ok = (p[i + k] & 0xC0) == 0x80;
            if (ok && n == 3 && c == 0xE0) ok = p[i + 1] >= 0xA0;
            if (ok && n == 3 && c == 0xED) ok = p[i + 1] < 0xA0;
            if (ok && n == 4 && c == 0xF0) ok = p[i + 1] >= 0x90;
            if (ok && n == 4 && c == 0xF4) ok = p[i + 1] < 0x90;
            if (ok) {
                fwrite(p + i, 1, n, j->out);
                i += n;
            } else {
                fputs("\\ufffd", j->out);
                i++;
            }
        }
    }
    fputc('"', j->out);
}

void json_key(json *j, const char *key) {
    before(j);
    put_escaped(j, key, strlen(key));
    fputs(": ", j->out);
    j->after_key = true;
}

void json_string_n(json *j, const char *s, size_t len) {
    before(j);
    put_escaped(j, s, len);
}

void json_string(json *j, const char *s) { json_string_n(j, s, strlen(s)); }

void json_int(json *j, int64_t v) {
    before(j);
    fprintf(j->out, "%lld", (long long)v);
}

void json_uint(json *j, uint64_t v) {
    before(j);
    fprintf(j->out, "%llu", (unsigned long long)v);
}

void json_double(json *j, double v) {
    before(j);
    if (isfinite(v))
        fprintf(j->out, "%.17g", v);
    else
        fputs("null", j->out);
}

void json_bool(json *j, bool v) {
    before(j);
    fputs(v ? "true" : "false", j->out);
}

void json_null(json *j) {
    before(j);
    fputs("null", j->out);
}

void json_finish(json *j) { fputc('\n', j->out); }

void json_float(json *j, float v) {
    before(j);
    if (isfinite(v))
        fprintf(j->out, "%.9g", (double)v);
    else
        fputs("null", j->out);
}
