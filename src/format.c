/*
 * format.c - text for people: sizes ("1.50 GiB", llama.cpp's "%8.2f MiB")
 * and sizes from people ("96G", "512MiB", "64MB"); bytes from a file made
 * safe for a terminal; metadata values, and how two of them differ.
 *
 * Escaping.  Names, keys and string values come from files, and a file may
 * hold anything: an ESC or OSC sequence in general.name would rewrite the
 * reader's terminal, a newline would forge an output line, a right-to-left
 * override would reorder what is shown.  Text output therefore passes every
 * such string through one escaper: printable ASCII and well-formed UTF-8 are
 * kept; C0 controls and DEL become \n, \r, \t or \xNN; C1 controls and the
 * bidirectional overrides become \uNNNN; a byte that is not part of
 * well-formed UTF-8 becomes \xNN.  The escaper works on whole units (one
 * byte or one UTF-8 sequence) so a cut never splits a character.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ggufmap/report.h"
#include "ggufmap/source.h"
#include "ggufmap/types.h"

#include "internal.h"

/* ------------------------------------------------------------------------ */
/* Sizes                                                                     */
/* ------------------------------------------------------------------------ */

const char *gm_fmt_bytes(char *buf, size_t cap, uint64_t bytes) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

const char *ggufmap_format_bytes(char *buf, size_t cap, uint64_t bytes) { return gm_fmt_bytes(buf, cap, bytes); }

const char *gm_fmt_mib(char *buf, size_t cap, uint64_t bytes) {
    snprintf(buf, cap, "%.2f MiB", (double)bytes / 1024.0 / 1024.0);
    return buf;
}

int ggufmap_parse_size(const char *s, uint64_t *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return GGUFMAP_EINVAL;
    double mul = 1;
    if (*end) {
        static const struct { const char *suffix; double mul; } suffixes[] = {
            {"", 1},     {"B", 1},       {"K", 1024.0},  {"KiB", 1024.0}, {"KB", 1e3},
            {"M", 1048576.0}, {"MiB", 1048576.0}, {"MB", 1e6}, {"G", 1073741824.0}, {"GiB", 1073741824.0},
            {"GB", 1e9}, {"T", 1099511627776.0}, {"TiB", 1099511627776.0}, {"TB", 1e12},
        };
        size_t i;
        for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
            if (strcasecmp(end, suffixes[i].suffix) == 0) break;
        if (i == sizeof suffixes / sizeof suffixes[0]) return GGUFMAP_EINVAL;
        mul = suffixes[i].mul;
    }
    double bytes = v * mul;
    if (bytes >= 18446744073709551615.0) return GGUFMAP_EINVAL;
    *out = (uint64_t)bytes;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Escaping for terminals                                                    */
/* ------------------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence at s (n bytes left) and its code
 * point, or 0 when the bytes there are not one (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF). */
static size_t utf8_unit(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char b = s[0];
    size_t len = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? (b <= 0xEF ? 3 : 0) : b >= 0xC2 ? 2 : 0;
    if (len == 0 || len > n) return 0;
    uint32_t v = b & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[k] & 0x3F);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
        return 0;
    *cp = v;
    return len;
}

/* Code points that steer a terminal or the order of what it shows. */
static bool invisible_control(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* Writes the escaped form of the unit at s into unit (>= 8 bytes); returns
 * its length and sets *used to the input bytes it stands for. */
static size_t escape_unit(const unsigned char *s, size_t n, char *unit, size_t *used) {
    unsigned char b = s[0];
    *used = 1;
    if (b == '\n') return (size_t)snprintf(unit, 8, "\\n");
    if (b == '\r') return (size_t)snprintf(unit, 8, "\\r");
    if (b == '\t') return (size_t)snprintf(unit, 8, "\\t");
    if (b < 0x20 || b == 0x7F) return (size_t)snprintf(unit, 8, "\\x%02x", b);
    if (b < 0x80) {
        unit[0] = (char)b;
        return 1;
    }
    uint32_t cp = 0;
    size_t len = utf8_unit(s, n, &cp);
    if (len == 0) return (size_t)snprintf(unit, 8, "\\x%02x", b);
    *used = len;
    if (invisible_control(cp)) return (size_t)snprintf(unit, 8, "\\u%04x", (unsigned)cp);
    memcpy(unit, s, len);
    return len;
}

const char *ggufmap_escape(char *buf, size_t cap, const char *s, size_t n) {
    size_t o = 0, used;
    char unit[8];
    if (cap == 0) return buf;
    for (size_t i = 0; i < n; i += used) {
        size_t k = escape_unit((const unsigned char *)s + i, n - i, unit, &used);
        if (o + k >= cap) break; /* whole units only */
        memcpy(buf + o, unit, k);
        o += k;
    }
    buf[o] = '\0';
    return buf;
}

void ggufmap_fputs_escaped(FILE *out, const char *s, size_t n) {
    size_t used;
    char unit[8];
    for (size_t i = 0; i < n; i += used) {
        size_t k = escape_unit((const unsigned char *)s + i, n - i, unit, &used);
        fwrite(unit, 1, k, out);
    }
}

/* ------------------------------------------------------------------------ */
/* Metadata values                                                           */
/* ------------------------------------------------------------------------ */

#define SHOWN_STRING 120  /* bytes of a string value shown unless in full */
#define SHOWN_ELEMENT 40  /* bytes of a string element */
#define SHOWN_ELEMENTS 8  /* array elements shown unless in full */

static void print_string(FILE *out, const char *s, uint64_t n, uint64_t shown) {
    fputc('"', out);
    ggufmap_fputs_escaped(out, s, (size_t)(n > shown ? shown : n));
    fprintf(out, "\"%s", n > shown ? "..." : "");
}

/* The shortest %g form that reads back as the same value at the value's
 * own precision: 1e-05 for the f32 nearest 1e-5, not 9.99999975e-06. */
static void print_float(FILE *out, double v, bool f32) {
    char text[40];
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        double back = strtod(text, NULL);
        if (f32 ? (float)back == (float)v : back == v) break;
    }
    fputs(text, out);
}

/* A number of type `type`: element i of an array, or the scalar. */
static void print_number(FILE *out, const ggufmap_kv *kv, int32_t type, uint64_t i) {
    bool array = kv->type == GGUFMAP_VALUE_ARRAY;
    int64_t iv;
    double fv;
    if (type == GGUFMAP_VALUE_FLOAT32 || type == GGUFMAP_VALUE_FLOAT64) {
        if ((array ? ggufmap_kv_array_float(kv, i, &fv) : ggufmap_kv_float(kv, &fv)) == GGUFMAP_OK)
            print_float(out, fv, type == GGUFMAP_VALUE_FLOAT32);
    } else if ((array ? ggufmap_kv_array_int(kv, i, &iv) : ggufmap_kv_int(kv, &iv)) == GGUFMAP_OK) {
        if (type == GGUFMAP_VALUE_BOOL) fprintf(out, "%s", iv ? "true" : "false");
        else fprintf(out, "%lld", (long long)iv);
    } else { /* a u64 above INT64_MAX: its 8 little-endian bytes */
        fprintf(out, "%llu", (unsigned long long)gm_le64(kv->value + (array ? i * 8 : 0)));
    }
}

/* Element `index` of an array, whose string elements are walked with *cursor. */
static void print_element(FILE *out, const ggufmap_kv *kv, uint64_t index, uint64_t *cursor) {
    const char *s;
    uint64_t n;
    if (kv->elem_type != GGUFMAP_VALUE_STRING) print_number(out, kv, kv->elem_type, index);
    else if (ggufmap_kv_array_next_string(kv, cursor, &s, &n) == GGUFMAP_OK) print_string(out, s, n, SHOWN_ELEMENT);
}

void gm_print_kv_value(FILE *out, const ggufmap_kv *kv, bool full) {
    const char *s;
    uint64_t n;
    if (kv->type == GGUFMAP_VALUE_STRING && ggufmap_kv_string(kv, &s, &n) == GGUFMAP_OK) {
        print_string(out, s, n, full ? n : SHOWN_STRING);
        return;
    }
    if (kv->type != GGUFMAP_VALUE_ARRAY) {
        print_number(out, kv, kv->type, 0);
        return;
    }
    uint64_t shown = full || kv->count <= SHOWN_ELEMENTS ? kv->count : SHOWN_ELEMENTS, cursor = 0;
    fprintf(out, "[%s x %llu] [", ggufmap_value_type_name(kv->elem_type), (unsigned long long)kv->count);
    for (uint64_t i = 0; i < shown; i++) {
        if (i) fprintf(out, ", ");
        print_element(out, kv, i, &cursor);
    }
    fprintf(out, "%s]", shown < kv->count ? ", ..." : "");
}

/* The first element at which two arrays of one element type differ, or the
 * shorter count when one is a prefix of the other. */
static uint64_t first_difference(const ggufmap_kv *a, const ggufmap_kv *b) {
    uint64_t n = a->count < b->count ? a->count : b->count, ca = 0, cb = 0;
    uint32_t w = ggufmap_value_type_size(a->elem_type);
    for (uint64_t i = 0; i < n; i++) {
        if (w && memcmp(a->value + i * w, b->value + i * w, w) != 0) return i;
        const char *sa, *sb;
        uint64_t na, nb;
        if (!w && (ggufmap_kv_array_next_string(a, &ca, &sa, &na) || ggufmap_kv_array_next_string(b, &cb, &sb, &nb) ||
                   na != nb || memcmp(sa, sb, (size_t)na) != 0))
            return i;
    }
    return n;
}

/* Element i of an array (string elements found by walking from the start). */
static void print_element_at(FILE *out, const ggufmap_kv *kv, uint64_t i) {
    uint64_t cursor = 0;
    const char *s;
    uint64_t n;
    if (kv->elem_type == GGUFMAP_VALUE_STRING)
        for (uint64_t k = 0; k < i; k++) ggufmap_kv_array_next_string(kv, &cursor, &s, &n);
    print_element(out, kv, i, &cursor);
}

static void print_difference(FILE *out, const ggufmap_kv *a, const ggufmap_kv *b) {
    bool arrays = a->type == GGUFMAP_VALUE_ARRAY && b->type == GGUFMAP_VALUE_ARRAY;
    if (!arrays || a->elem_type != b->elem_type) {
        bool typed = a->type != b->type || a->elem_type != b->elem_type; /* else the values say it */
        if (typed) fprintf(out, "%s ", ggufmap_value_type_name(a->type));
        gm_print_kv_value(out, a, false);
        fprintf(out, " vs ");
        if (typed) fprintf(out, "%s ", ggufmap_value_type_name(b->type));
        gm_print_kv_value(out, b, false);
        return;
    }
    uint64_t i = first_difference(a, b);
    if (a->count != b->count) {
        fprintf(out, "%llu vs %llu elements; ", (unsigned long long)a->count, (unsigned long long)b->count);
        uint64_t common = a->count < b->count ? a->count : b->count;
        if (i == common) {
            fprintf(out, "the first %llu are equal", (unsigned long long)common);
            return;
        }
    }
    fprintf(out, "element %llu: ", (unsigned long long)i);
    print_element_at(out, a, i);
    fprintf(out, " vs ");
    print_element_at(out, b, i);
}

const char *gm_fmt_kv_difference(char *buf, size_t cap, const ggufmap_kv *a, const ggufmap_kv *b) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (cap) buf[0] = '\0';
    if (!f) return buf;
    print_difference(f, a, b);
    if (fclose(f) == 0 && text) snprintf(buf, cap, "%s", text);
    free(text);
    return buf;
}
