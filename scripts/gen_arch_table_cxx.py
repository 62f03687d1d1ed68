"""
gen_arch_table_cxx.py - the small C++ front end behind gen_arch_table.py.

llama.cpp's tensor loaders (src/models/*.cpp load_arch_tensors, the helpers
and the generic pass of src/llama-model.cpp) are written in a narrow subset
of C++: declarations of ints, bools, strings and lambdas, if/else, for loops,
a switch, assignments of create_tensor() results and a few calls.  This
module turns that text into a syntax tree: a tokenizer (comments and
preprocessor lines dropped, every token keeps its line) and a
recursive-descent parser for statements and a precedence-climbing parser for
expressions.  It knows nothing about llama.cpp's meaning; gen_arch_table.py
compiles the tree.

Node shapes (tuples, first item the kind):
  statements: ('block', [stmt]), ('if', cond, then, else|None),
    ('for', init_stmt|None, cond|None, step|None, body), ('rangefor', body),
    ('switch', expr, [(values|None, [stmt])]), ('decl', type_text, [(name, init|('ctor', [args])|None)]),
    ('expr', expr), ('return', expr|None), ('break',), ('continue',),
    ('throw', message, thrown expression|None), ('try', block, catch_block), ('load_locals',), ('empty',); every statement is wrapped as (line, node).
  expressions: ('num', int), ('str', text), ('name', 'a::b'), ('un', op, e),
    ('post', op, e), ('bin', op, a, b), ('assign', op, lhs, rhs),
    ('cond', c, a, b), ('call', fn, [args]), ('member', e, name, arrow),
    ('index', e, i), ('cast', type_text, e), ('init', [items]),
    ('lambda', [(type_text, name)], body_block)
"""

import re

# ------------------------------------------------------------------ tokens

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<str>"(?:\\.|[^"\\])*")
  | (?P<chr>'(?:\\.|[^'\\])')
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><<=|>>=|\.\.\.|->|::|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^=|[-+*/%<>=!&|^~?:;,.(){}\[\]#])
""", re.VERBOSE | re.DOTALL)


class Token:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line

    def __repr__(self):
        return f"{self.text}@{self.line}"


def tokenize(text, first_line=1):
    """Tokens of text; comments and preprocessor lines are dropped."""
    # Preprocessor lines (with their continuations) become blank lines.
    lines = text.split("\n")
    out_lines, cont = [], False
    for ln in lines:
        if cont or ln.lstrip().startswith("#"):
            cont = ln.rstrip().endswith("\\")
            out_lines.append("")
        else:
            out_lines.append(ln)
    text = "\n".join(out_lines)
    toks, pos, line = [], 0, first_line
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"line {line}: cannot tokenize {text[pos:pos + 20]!r}")
        kind = m.lastgroup
        s = m.group()
        if kind not in ("ws", "lcomment", "bcomment"):
            toks.append(Token(kind, s, line))
        line += s.count("\n")
        pos = m.end()
    return toks


# ------------------------------------------------------------------ parser

_TYPE_WORDS = {
    "int", "unsigned", "signed", "long", "short", "char", "bool", "float", "double", "auto", "void",
    "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "llm_tensor", "llama_token", "ggml_tensor", "ggml_type", "llama_layer", "std", "struct", "const",
    "static", "constexpr", "llm_arch", "llama_pos", "llama_hparams",
}

_BINARY = [  # lowest to highest precedence
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"),
    ("+", "-"), ("*", "/", "%"),
]
_PREC = {op: i + 1 for i, ops in enumerate(_BINARY) for op in ops}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
_CASTS = {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"}


class Parser:
    def __init__(self, toks, where=""):
        self.t, self.i, self.where = toks, 0, where

    # -- helpers
    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else Token("eof", "", self.t[-1].line if self.t else 0)

    def at(self, text, k=0):
        return self.peek(k).text == text and self.peek(k).kind in ("op", "id")

    def take(self, text=None):
        tok = self.peek()
        if text is not None and tok.text != text:
            raise SyntaxError(f"{self.where}:{tok.line}: expected {text!r}, got {tok.text!r}")
        self.i += 1
        return tok

    def skip_balanced(self, open_, close):
        depth = 0
        while True:
            tok = self.take()
            if tok.kind == "eof":
                raise SyntaxError(f"{self.where}: unbalanced {open_}")
            if tok.text == open_:
                depth += 1
            elif tok.text == close:
                depth -= 1
                if depth == 0:
                    return

    # -- types (for declarations and casts)
    def looks_like_decl(self):
        """Does a declaration start here?  Type words, or NAME [* &] NAME (=|;|,|{|()."""
        tok = self.peek()
        if tok.kind != "id":
            return False
        if tok.text == "std" and self.at("::", 1) and self.peek(3).text == "(":
            return False  # std::copy(...), std::fill(...): a call
        if tok.text in _TYPE_WORDS and not (tok.text == "std" and self.at("::", 1) and
                                            self.peek(2).text in ("to_string", "max", "min", "fill")):
            return True
        j = 1
        while self.peek(j).text == "::" and self.peek(j + 1).kind == "id":
            j += 2
        if self.peek(j).text == "<":  # template type
            j = self.template_end(j)
            if j < 0:
                return False
        while self.peek(j).text in ("*", "&", "const"):
            j += 1
        return self.peek(j).kind == "id" and self.peek(j + 1).text in ("=", ";", ",", "{", "(", "[", ":")

    def template_end(self, j):
        """The token index after the '>' closing the '<' at peek(j), or -1
        when this is no template argument list (a comparison)."""
        depth = 0
        for k in range(j, j + 40):
            s = self.peek(k).text
            if s == "<":
                depth += 1
            elif s in (">", ">>"):
                depth -= len(s)
                if depth <= 0:
                    return k + 1
            elif s in (";", "{", "}", ""):
                return -1
        return -1

    def parse_type(self):
        parts = []
        while True:
            tok = self.peek()
            if tok.text in ("const", "static", "constexpr", "struct", "unsigned", "signed", "long", "short"):
                parts.append(self.take().text)
                continue
            break
        tok = self.take()
        parts.append(tok.text)
        while self.at("::"):
            self.take()
            parts.append("::" + self.take().text)
        if self.at("<"):
            end = self.template_end(0)
            if end < 0:
                raise SyntaxError(f"{self.where}:{self.peek().line}: unbalanced template arguments")
            while end > 0:
                parts.append(self.take().text)
                end -= 1
        while self.peek().text in ("long", "int", "const") and parts[-1] in ("long", "unsigned", "short", "signed"):
            parts.append(self.take().text)
        while self.peek().text in ("*", "&", "const"):
            parts.append(self.take().text)
        return " ".join(parts).replace(" ::", "::")

    # -- statements
    def parse_block(self):
        self.take("{")
        stmts = []
        while not self.at("}"):
            stmts.append(self.parse_stmt())
        self.take("}")
        return ("block", stmts)

    def parse_stmt(self):
        tok = self.peek()
        line = tok.line
        return (line, self._stmt())

    def _stmt(self):
        tok = self.peek()
        s = tok.text
        if tok.kind == "op" and s == "{":
            return self.parse_block()
        if tok.kind == "op" and s == ";":
            self.take()
            return ("empty",)
        if tok.kind == "id":
            if s == "if":
                self.take()
                if self.at("constexpr"):
                    self.take()
                self.take("(")
                if self.looks_like_decl():
                    ty = self.parse_type()
                    name = self.take().text
                    self.take("=")
                    init = self.parse_expr()
                    cond = ("declcond", ty, name, init)
                    if self.at(";"):  # if (init; cond): the condition is its own expression
                        self.take()
                        cond = ("declcond", ty, name, init, self.parse_expr())
                else:
                    cond = self.parse_expr()
                self.take(")")
                then = self.parse_stmt()
                els = None
                if self.at("else"):
                    self.take()
                    els = self.parse_stmt()
                return ("if", cond, then, els)
            if s == "for":
                return self.parse_for()
            if s == "while":
                raise SyntaxError(f"{self.where}:{tok.line}: while loops are not supported")
            if s == "switch":
                return self.parse_switch()
            if s == "return":
                self.take()
                e = None if self.at(";") else self.parse_expr()
                self.take(";")
                return ("return", e)
            if s in ("break", "continue"):
                self.take()
                self.take(";")
                return (s,)
            if s == "throw":  # ('throw', first string literal of the message or "", the thrown expression or None)
                text = ""
                self.take()
                start = self.i
                try:
                    thrown = self.parse_expr()
                    if not self.at(";"):
                        raise SyntaxError("throw")
                except SyntaxError:
                    thrown = None
                self.i = start
                while not self.at(";"):
                    tok = self.take()
                    if tok.kind == "str" and not text:
                        text = tok.text[1:-1]
                self.take(";")
                return ("throw", text, thrown)
            if s == "try":  # try { A } catch (...) { B }: kept as ('try', A, B)
                self.take()
                body = self.parse_block()
                self.take("catch")
                self.skip_balanced("(", ")")
                return ("try", body, self.parse_block())
            j = 1 if s == "const" else 0
            if self.peek(j).text == "auto" and self.peek(j + 1).text == "[":  # auto [a, b] = e;
                self.i += j + 2
                names = []
                while not self.at("]"):
                    tok = self.take()
                    if tok.kind == "id":
                        names.append(tok.text)
                self.take("]")
                self.take("=")
                self.parse_expr()
                self.take(";")
                return ("decl", "auto *", [(n, None) for n in names])  # structured bindings: values not followed
            if s == "using":  # a type alias: nothing to run
                while not self.at(";"):
                    self.take()
                self.take(";")
                return ("empty",)
            if s == "LLAMA_LOAD_LOCALS":
                self.take()
                self.take(";")
                return ("load_locals",)
            if self.looks_like_decl():
                return self.parse_decl()
        e = self.parse_expr()
        self.take(";")
        return ("expr", e)

    def parse_decl(self, need_semicolon=True):
        ty = self.parse_type()
        decls = []
        while True:
            while self.peek().text in ("*", "&"):  # T *a, *b;
                self.take()
            name = self.take().text
            init = None
            if self.at("="):
                self.take()
                init = self.parse_assign()
            elif self.at("{"):
                init = self.parse_primary()
            elif self.at("("):
                init = ("ctor", self.parse_args())
            elif self.at("["):
                self.skip_balanced("[", "]")
            elif self.at(":"):  # range-for declaration: handled by the caller
                decls.append((name, None))
                return ("decl", ty, decls)
            decls.append((name, init))
            if self.at(","):
                self.take()
                continue
            break
        if need_semicolon:
            self.take(";")
        return ("decl", ty, decls)

    def parse_for(self):
        self.take("for")
        self.take("(")
        init = None
        if not self.at(";"):
            line = self.peek().line
            if self.looks_like_decl():
                d = self.parse_decl(need_semicolon=False)
                if self.at(":"):  # range-based for
                    self.take()
                    self.parse_expr()
                    self.take(")")
                    return ("rangefor", self.parse_stmt(), d)
                init = (line, d)
            else:
                init = (line, ("expr", self.parse_expr()))
        self.take(";")
        cond = None if self.at(";") else self.parse_expr()
        self.take(";")
        step = None if self.at(")") else self.parse_expr()
        self.take(")")
        body = self.parse_stmt()
        return ("for", init, cond, step, body)

    def parse_switch(self):
        self.take("switch")
        self.take("(")
        e = self.parse_expr()
        self.take(")")
        self.take("{")
        cases, cur = [], None
        while not self.at("}"):
            if self.at("case"):
                self.take()
                v = self.parse_cond()
                self.take(":")
                if cur is None or cur[1]:
                    cur = ([], [])
                    cases.append(cur)
                cur[0].append(v)
            elif self.at("default"):
                self.take()
                self.take(":")
                cur = (None, [])
                cases.append(cur)
            else:
                if cur is None:
                    raise SyntaxError(f"{self.where}:{self.peek().line}: statement before the first case")
                cur[1].append(self.parse_stmt())
        self.take("}")
        return ("switch", e, cases)

    # -- expressions
    def parse_expr(self):
        e = self.parse_assign()
        while self.at(","):
            self.take()
            e = ("comma", e, self.parse_assign())
        return e

    def parse_assign(self):
        lhs = self.parse_cond()
        if self.peek().kind == "op" and self.peek().text in _ASSIGN:
            op = self.take().text
            return ("assign", op, lhs, self.parse_assign())
        return lhs

    def parse_cond(self):
        c = self.parse_binary(1)
        if self.at("?"):
            self.take()
            a = self.parse_assign()
            self.take(":")
            b = self.parse_assign()
            return ("cond", c, a, b)
        return c

    def parse_binary(self, min_prec):
        lhs = self.parse_unary()
        while True:
            tok = self.peek()
            prec = _PREC.get(tok.text) if tok.kind == "op" else None
            if prec is None or prec < min_prec:
                return lhs
            self.take()
            rhs = self.parse_binary(prec + 1)
            lhs = ("bin", tok.text, lhs, rhs)

    def is_cast(self):
        """'(' TYPE ')' followed by the start of an operand."""
        if not self.at("("):
            return False
        if self.peek(1).kind == "id":  # (some_struct *) e
            k = 2
            while self.peek(k).text == "*":
                k += 1
            if k > 2 and self.peek(k).text == ")":
                nxt = self.peek(k + 1)
                return nxt.kind in ("id", "num", "str") or nxt.text == "("
        j = 1
        words = 0
        while self.peek(j).kind == "id" or self.peek(j).text in ("*", "::"):
            if self.peek(j).kind == "id":
                if self.peek(j).text not in _TYPE_WORDS and not self.peek(j).text.endswith("_t"):
                    return False
                words += 1
            j += 1
        if words == 0 or self.peek(j).text != ")":
            return False
        nxt = self.peek(j + 1)
        return nxt.kind in ("id", "num", "str") or nxt.text in ("(", "!", "-", "~")

    def parse_unary(self):
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("!", "-", "+", "~", "*", "&", "++", "--"):
            self.take()
            return ("un", tok.text, self.parse_unary())
        if tok.kind == "id" and tok.text == "sizeof":
            self.take()
            self.skip_balanced("(", ")")
            return ("name", "sizeof")
        if self.is_cast():
            self.take("(")
            ty = []
            while not self.at(")"):
                ty.append(self.take().text)
            self.take(")")
            return ("cast", " ".join(ty), self.parse_unary())
        return self.parse_postfix(self.parse_primary())

    def parse_args(self):
        """'(' a, b, ... ')': the expressions."""
        self.take("(")
        args = []
        while not self.at(")"):
            args.append(self.parse_assign())
            if self.at(","):
                self.take()
        self.take(")")
        return args

    def parse_postfix(self, e):
        while True:
            if self.at("("):
                e = ("call", e, self.parse_args())
            elif self.at(".") or self.at("->"):
                arrow = self.take().text == "->"
                e = ("member", e, self.take().text, arrow)
            elif self.at("["):
                self.take()
                idx = self.parse_expr()
                self.take("]")
                e = ("index", e, idx)
            elif self.at("++") or self.at("--"):
                e = ("post", self.take().text, e)
            else:
                return e

    def parse_primary(self):
        tok = self.take()
        if tok.kind == "num":
            s = tok.text.rstrip("uUlLfF")
            if re.fullmatch(r"0[xX][0-9a-fA-F]+", s):
                return ("num", int(s, 16))
            if re.fullmatch(r"\d+", s):
                return ("num", int(s))
            return ("float", s)
        if tok.kind == "str":
            text = tok.text[1:-1]
            while self.peek().kind == "str" or self.peek().text in _PRI_MACROS:  # adjacent literals concatenate
                tok = self.take()
                text += _PRI_MACROS.get(tok.text, tok.text[1:-1])
            return ("str", text)
        if tok.kind == "chr":
            return ("num", ord(tok.text[1:-1][-1]))
        if tok.text == "(":
            e = self.parse_expr()
            self.take(")")
            return e
        if tok.text == "{":
            items = []
            while not self.at("}"):
                items.append(self.parse_assign())
                if self.at(","):
                    self.take()
            self.take("}")
            return ("init", items)
        if tok.text == "[":  # lambda
            while not self.at("]"):
                self.take()
            self.take("]")
            params = []
            self.take("(")
            while not self.at(")"):
                ty = self.parse_type()
                params.append((ty, self.take().text))
                if self.at(","):
                    self.take()
            self.take(")")
            while not self.at("{"):  # mutable, -> return type
                self.take()
            return ("lambda", params, self.parse_block())
        if tok.kind == "id":
            name = tok.text
            if name in _CASTS:
                self.take("<")
                ty = []
                depth = 1
                while True:
                    s = self.take().text
                    if s == "<":
                        depth += 1
                    elif s == ">":
                        depth -= 1
                        if depth == 0:
                            break
                    ty.append(s)
                self.take("(")
                e = self.parse_expr()
                self.take(")")
                return ("cast", " ".join(ty), e)
            while self.at("::"):
                self.take()
                name += "::" + self.take().text
            if self.at("<") and name in ("std::max", "std::min", "std::vector", "std::array"):
                self.skip_balanced("<", ">")
            return ("name", name)
        raise SyntaxError(f"{self.where}:{tok.line}: unexpected {tok.text!r}")


# <cinttypes> conversions inside format strings ("%" PRId64), as glibc spells them
_PRI_MACROS = {"PRId64": "ld", "PRIu64": "lu", "PRIi64": "li", "PRId32": "d", "PRIu32": "u", "PRIx64": "lx"}


def parse_body(text, first_line, where):
    """Parses '{ ... }' (a function body) starting at text[0]."""
    toks = tokenize(text, first_line)
    p = Parser(toks, where)
    return p.parse_block()


def find_function(text, qualified_name):
    """(body_text, first_line) of the definition of qualified_name in text,
    or None.  A definition is the name, its parameter list and then '{'
    (after an optional 'const' or 'override'); declarations and calls are
    passed over."""
    for m in re.finditer(r"\b" + re.escape(qualified_name) + r"\s*\(", text):
        j, depth = m.end() - 1, 0
        while True:
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        mm = re.match(r"\s*(const\s*)?(override\s*)?\{", text[j + 1:j + 64])
        if mm:
            start = j + 1 + mm.end() - 1
            return balanced(text, start), text.count("\n", 0, start) + 1
    return None


def balanced(text, start):
    """text[start:end] for the '{...}' block opening at start (strings,
    characters and comments respected)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            i = text.find("*/", i) + 2
            continue
        if c in "\"'":
            i += 1
            while text[i] != c:
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
        i += 1
    raise SyntaxError("unbalanced braces")
