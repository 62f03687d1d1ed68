// corpus_text.h - reads the corpus files of tests/regex for probe.cpp.
// A line "P text" (patterns) or "N text" (names) holds its text verbatim;
// "X text" holds it with C escapes (\n \r \t \\ \xHH) for bytes a line
// cannot show.  Other lines (comments "#", blank lines) are skipped.
// regex_driver.c reads the same format.
#ifndef GGUFMAP_TESTS_REGEX_CORPUS_TEXT_H
#define GGUFMAP_TESTS_REGEX_CORPUS_TEXT_H
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

static int hex_value(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool unescape(const std::string &in, std::string &out) {
    out.clear();
    for (size_t i = 0; i < in.size(); i++) {
        if (in[i] != '\\') {
            out += in[i];
            continue;
        }
        if (++i == in.size()) return false;
        switch (in[i]) {
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case '\\': out += '\\'; break;
        case 'x':
            if (i + 2 >= in.size() || hex_value(in[i + 1]) < 0 || hex_value(in[i + 2]) < 0) return false;
            out += (char)(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2]));
            i += 2;
            break;
        default: return false;
        }
    }
    return true;
}

static bool corpus_read(const char *path, char kind, std::vector<std::string> &out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "probe: cannot read %s\n", path);
        return false;
    }
    std::string line, text;
    for (size_t no = 1; std::getline(in, line); no++) {
        if (line.size() >= 2 && line[0] == kind && line[1] == ' ') {
            out.push_back(line.substr(2));
        } else if (line.size() >= 2 && line[0] == 'X' && line[1] == ' ') {
            if (!unescape(line.substr(2), text)) {
                std::fprintf(stderr, "probe: %s:%zu: bad escape\n", path, no);
                return false;
            }
            out.push_back(text);
        }
    }
    return true;
}
#endif
