"""
gen_arch_table_hparams.py - what gen_arch_table.py needs to compile llama.cpp's
hyperparameter code: the fields and methods of struct llama_hparams, the C++
integer types of expressions, and the statements of load_hparams /
load_arch_hparams (ml.get_key and its siblings, assignments to hparams
fields, GGML_ASSERT, throw).

    HparamsModel(root)   src/llama-hparams.h read: fields, methods, limits
    HparamsMixin         methods of gen_arch_table.Compiler for the
                         "hparams" mode and for typed arithmetic

Data structure: llama_hparams is modelled as a store of fields, each one
value or an array of values (std::array<T, N>, std::bitset<N>), with the
initializer the header gives (everything else is zero: the model holds
`llama_hparams hparams = {}`).  A field of a floating type is read and type
checked like any other but its value is never known to the table.  Methods
(n_head(il), n_embd_k_gqa(il), ...) are not compiled: src/arch.c implements
each one from src/llama-hparams.cpp; the table names them.

C++ integer semantics matter where a hostile file makes values wrap: each
expression gets a type (i32, u32, i64, u64, bool) by the usual arithmetic
conversions and 32-bit arithmetic is wrapped with a CAST node.
"""

import re

# ------------------------------------------------------------------ types

CTYPES = ["I64", "I32", "U32", "U64", "BOOL", "F32", "STR", "NONE"]
_TYPE_WORDS = {
    "int": "I32", "int32_t": "I32", "llama_token": "I32", "unsigned": "U32", "uint32_t": "U32", "uint16_t": "U32",
    "uint8_t": "U32", "int16_t": "I32", "int8_t": "I32", "int64_t": "I64", "long": "I64", "size_t": "U64",
    "uint64_t": "U64", "bool": "BOOL", "float": "F32", "double": "F32", "std::string": "STR", "char": "STR",
}


def ctype_of_text(text, enums=()):
    """The CTYPES code of a C++ type spelling ('const uint32_t', 'enum llama_swa_type', ...)."""
    words = [w for w in re.split(r"[\s*&]+", text.replace("const", " ").replace("static", " ")) if w]
    for w in words:
        if w in _TYPE_WORDS:
            return _TYPE_WORDS[w]
        if w in enums or w.startswith("llama_") or w.startswith("llm_"):
            return "I32"  # an enum: its values fit an int
    return "I64"


def promote(t):
    return "I32" if t in ("BOOL",) else t


def common(a, b):
    """The usual arithmetic conversions of two operand types (unknown: i64)."""
    a, b = promote(a), promote(b)
    if a not in ("I32", "U32", "I64", "U64") or b not in ("I32", "U32", "I64", "U64"):
        return "I64"
    if a == b:
        return a
    if "U64" in (a, b):
        return "U64"
    if "I64" in (a, b):
        return "I64"
    return "U32"  # i32 with u32


# ------------------------------------------------------------------ the header


def enum_items(body, value_of):
    """(name, value) of each constant of a C enum's body, comments dropped:
    an explicit value read by value_of(text, next), else one more than the
    last."""
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", body, flags=re.S)
    nxt = 0
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            name, val = (s.strip() for s in item.split("=", 1))
            nxt = value_of(val, nxt)
        else:
            name = item
        yield name, nxt
        nxt += 1


class HparamsModel:
    """struct llama_hparams of src/llama-hparams.h: fields, methods, limits."""

    def _enum_value(self, text, nxt):
        """An enum constant's explicit value: a number, or a constant read
        before (else the implicit one)."""
        try:
            return int(text, 0)
        except ValueError:
            return self.enums.get(text, nxt)

    def __init__(self, root):
        with open(f"{root}/src/llama-hparams.h", encoding="utf-8") as f:
            text = f.read()
        with open(f"{root}/include/llama.h", encoding="utf-8") as f:
            api = f.read()
        self.defines = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define\s+(LLAMA_MAX_\w+)\s+(\d+)", text)}
        self.enums = {}  # constant -> value
        self.enum_types = set()
        for src in (text, api):
            for m in re.finditer(r"enum\s+(\w+)\s*(?::\s*\w+\s*)?\{(.*?)\}", src, re.S):
                self.enum_types.add(m.group(1))
                for name, value in enum_items(m.group(2), self._enum_value):
                    self.enums[name] = value
        m = re.search(r"struct llama_hparams \{(.*?)\n\};", text, re.S)
        body = re.sub(r"//[^\n]*", "", m.group(1))
        while "{" in body:  # inline bodies: only the declaration matters
            i = body.index("{")
            j, depth = i, 0
            while True:
                depth += {"{": 1, "}": -1}.get(body[j], 0)
                if depth == 0:
                    break
                j += 1
            body = body[:i] + ";" + body[j + 1:]
        self.fields = {}  # name -> (ctype, count, init or None for unknown)
        self.order = []
        self.methods = {}  # name -> ctype of the result
        for decl in body.split(";"):
            d = " ".join(decl.split())
            if not d or d.startswith("struct ") and "{" in d:
                continue
            mm = re.fullmatch(r"(?:(?:static|virtual)\s+)?([\w:<>, ]+?)\s+(\w+)\s*\((.*)\)\s*(const)?\s*(\{.*)?", d)
            if mm and "=" not in mm.group(1):
                self.methods[mm.group(2)] = ctype_of_text(mm.group(1), self.enum_types)
                continue
            mm = re.fullmatch(r"std::array<\s*([\w:]+)\s*,\s*(\w+)\s*>\s+(\w+)", d)
            if mm:
                self._field(mm.group(3), ctype_of_text(mm.group(1), self.enum_types), self._count(mm.group(2)), 0)
                continue
            mm = re.fullmatch(r"std::bitset<\s*(\w+)\s*>\s+(\w+)", d)
            if mm:
                self._field(mm.group(2), "BOOL", self._count(mm.group(1)), 0)
                continue
            mm = re.fullmatch(r"(?:enum\s+)?([\w:]+)\s+(\w+)(?:\s*=\s*(.+))?", d)
            if mm and mm.group(1) not in ("struct", "return"):
                ty = ctype_of_text(mm.group(1), self.enum_types)
                self._field(mm.group(2), ty, 1, self._init(mm.group(3), ty))

    def _count(self, s):
        return self.defines[s] if s in self.defines else int(s)

    def _init(self, s, ty):
        if s is None:
            return 0
        s = s.strip()
        if ty == "F32":
            return None
        if s in ("true", "false"):
            return int(s == "true")
        if s in self.enums:
            return self.enums[s]
        if re.fullmatch(r"-?\d+[uU]?", s):
            return int(s.rstrip("uU"))
        return None

    def _field(self, name, ty, count, init):
        if name in self.fields:
            return
        self.fields[name] = (ty, count, init)
        self.order.append(name)

    def index(self, name):
        return self.order.index(name)


# ------------------------------------------------------------------ the compiler's hparams mode

# ml.get_* -> the mode GM_GK_* of a GETKEY statement
GET_CALLS = {"get_key": "KEY", "get_key_or_arr": "KEY_OR_ARR", "get_arr": "ARR", "get_arr_n": "ARR_N"}
GK_MODES = ["KEY", "KEY_POOLING", "KEY_OR_ARR", "KEY_OR_ARR_SCALAR", "ARR", "ARR_VEC", "ARR_N"]
# the hparams methods with an effect on the fields (src/arch.c implements them)
EFFECT_METHODS = ("set_swa_pattern", "set_recr_pattern")


def is_get_call(e):
    return (isinstance(e, tuple) and e and e[0] == "call" and e[1][0] == "member" and
            e[1][1] == ("name", "ml") and e[1][2] in GET_CALLS)


def contains(node, pred):
    """Does a syntax tree hold a node for which pred is true?"""
    if isinstance(node, tuple):
        if node and pred(node):
            return True
        return any(contains(x, pred) for x in node)
    if isinstance(node, list):
        return any(contains(x, pred) for x in node)
    return False


def contains_get(node):
    return contains(node, is_get_call)


def hparams_field_of(e):
    """'F' for hparams.F, or None."""
    if isinstance(e, tuple) and e and e[0] == "member" and e[1] == ("name", "hparams"):
        return e[2]
    return None


class HparamsMixin:
    """Typed arithmetic and the hparams-mode statements of Compiler.  The
    host class provides self.p (Program), self.fn, self.path, self.hp
    (HparamsModel), self.mode and the generic compile methods."""

    # -------------------------------------------------------- types

    def etype(self, env, e):
        """The C++ type (CTYPES) of an int expression, 'I64' when unsure."""
        k = e[0]
        hp = self.hp
        if k == "num":
            return "I32" if -2 ** 31 <= e[1] < 2 ** 31 else "I64"
        if k == "name":
            t = env.type_of(e[1]) if hasattr(env, "type_of") else None
            if t:
                return t
            if e[1] in ("true", "false"):
                return "BOOL"
            return "I64"
        if k == "member":
            f = hparams_field_of(e)
            if f in hp.fields and hp.fields[f][1] == 1:
                return hp.fields[f][0]
            return "I64"
        if k == "index":
            f = hparams_field_of(e[1])
            if f in hp.fields:
                return hp.fields[f][0]
            return "I64"
        if k == "call":
            fn = e[1]
            if fn[0] == "member" and fn[1] == ("name", "hparams") and fn[2] in hp.methods:
                return hp.methods[fn[2]]
            if fn in (("name", "std::max"), ("name", "std::min")) and len(e[2]) == 2:
                return common(self.etype(env, e[2][0]), self.etype(env, e[2][1]))
            if is_get_call(e):
                return "BOOL"
            return "I64"
        if k == "cast":
            return ctype_of_text(e[1], hp.enum_types)
        if k == "un":
            if e[1] == "!":
                return "BOOL"
            return promote(self.etype(env, e[2]))
        if k == "bin":
            if e[1] in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
                return "BOOL"
            if e[1] in ("<<", ">>"):
                return promote(self.etype(env, e[2]))
            return common(self.etype(env, e[2]), self.etype(env, e[3]))
        if k == "cond":
            return common(self.etype(env, e[2]), self.etype(env, e[3]))
        return "I64"

    def cast(self, node, t):
        """node converted to type t (no node for 64-bit signed)."""
        if t in ("I32", "U32", "BOOL", "U64"):
            return self.p.expr("CAST", node, v=CTYPES.index(t))
        return node

    def typed_bin(self, env, e, line, a, b):
        """The node of a binary expression with C++'s conversions."""
        p = self.p
        op = e[1]
        if op in ("&&", "||"):
            return None
        ta, tb = self.etype(env, e[2]), self.etype(env, e[3])
        if op in ("<<", ">>"):
            t = promote(ta)
            return self.cast(p.expr(BINOPS_KIND[op], a, b), t) if t in ("I32", "U32") else None
        t = common(ta, tb)
        if t not in ("I32", "U32"):
            return None
        a2 = a if promote(ta) == t else self.cast(a, t)
        b2 = b if promote(tb) == t else self.cast(b, t)
        node = p.expr(BINOPS_KIND[op], a2, b2)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return node
        return self.cast(node, t)

    # -------------------------------------------------------- hparams statements

    def kv_key(self, env, e, line):
        """The key template ("%s.context_length") of an LLM_KV argument."""
        if e[0] == "name":
            b = env.get(e[1])
            if b and b[0] == "kv":
                return b[1]
            if e[1] in self.p.src.kv_names:
                return self.p.src.kv_names[e[1]]
        if e[0] == "call" and e[1][0] == "member" and e[1][2] in ("c_str", "str") and not e[2]:
            return self.kv_key(env, e[1][1], line)
        if e[0] == "call" and e[1][0] == "member" and e[1][1] == ("name", "ml") and e[1][2] == "llm_kv":
            return self.kv_key(env, e[2][0], line)
        raise self.error(line, f"key argument {e[0]}")

    def target_of(self, env, e, line):
        """(field index, local slot, ctype, is_array, is_vector) of a get_* target."""
        hp = self.hp
        f = hparams_field_of(e)
        if f is not None:
            if f not in hp.fields:
                raise self.error(line, f"hparams.{f} is not a field")
            ty, count, _ = hp.fields[f]
            return hp.index(f), -1, ty, count > 1, False
        if e[0] == "name":
            b = env.get(e[1])
            decl = env.decl_of(e[1]) or (self.p.src.model_members.get(e[1], "") if b is None else "")
            t = env.type_of(e[1]) or ctype_of_text(decl, hp.enum_types) if decl else env.type_of(e[1]) or "I64"
            if b and b[0] == "local":
                return -1, b[1], t, False, False
            is_vec = "vector" in decl
            is_arr = "std::array" in decl or is_vec
            m = re.search(r"<\s*([\w:]+)", decl)
            if m:
                t = ctype_of_text(m.group(1), hp.enum_types)
            return -1, -1, t, is_arr, is_vec
        if e[0] == "member" and hparams_field_of(e[1]) in ("posnet", "convnext"):
            return -1, -1, "U32", False, False  # llama_hparams_posnet / _convnext: u32 fields, not kept
        raise self.error(line, "get_* into an expression")

    def getkey(self, env, line, e, result_slot):
        """A GETKEY statement for ml.get_*(...); result_slot receives the bool."""
        p = self.p
        fn, args = e[1][2], e[2]
        mode = GET_CALLS[fn]
        key = self.kv_key(env, args[0], line)
        field, local, ty, is_arr, is_vec = self.target_of(env, args[1], line)
        n_expr, required = -1, p.const(1)
        rest = args[2:]
        if mode == "KEY_OR_ARR" and len(args) >= 3 and not is_arr:
            mode = "KEY_OR_ARR_SCALAR"
        elif mode == "KEY_OR_ARR":
            n_expr = self.int_expr(env, rest[0], line)
            rest = rest[1:]
        if mode == "ARR" and is_vec:
            mode = "ARR_VEC"
        if rest and rest[0][0] == "float":  # get_key(..., 0.0f): the float converts to bool
            required = p.const(int(float(rest[0][1]) != 0))
        elif rest:
            required = self.int_expr(env, rest[0], line)
        if mode in ("KEY", "KEY_OR_ARR_SCALAR") and is_arr:
            raise self.error(line, f"{fn} into an array")
        if mode == "KEY" and field >= 0 and self.hp.order[field] == "pooling_type":
            mode = "KEY_POOLING"  # get_key's enum llama_pooling_type overload: a u32, UNSPECIFIED when absent
            ty = "U32"
        if ty == "STR" and args[1][0] == "name":  # a string the code maps later: the key it holds
            b = env.get(args[1][1])
            if b and b[0] == "str" and len(b[1]) == 1 and isinstance(b[1][0], str):
                env.set(args[1][1], ("strkey", key, b[1][0]))
        return [("getkey", p.string(key), GK_MODES.index(mode) | (CTYPES.index(ty) << 8), field, local, n_expr,
                 result_slot, required, line, self.path)]

    def lift(self, env, line, e, out):
        """e with every ml.get_* call replaced by a local holding its result;
        the calls go to out in C++'s order (|| and && short-circuit)."""
        if is_get_call(e):
            slot = self.fn.local()
            out += self.getkey(env, line, e, slot)
            name = f"__get{slot}"
            env.set(name, ("local", slot))
            env.set_type(name, "BOOL")
            return ("name", name)
        if e[0] == "bin" and e[1] in ("||", "&&") and contains_get(e[3]):
            a = self.lift(env, line, e[2], out)
            slot = self.fn.local()
            name = f"__sc{slot}"
            env.set(name, ("local", slot))
            env.set_type(name, "BOOL")
            inner = []
            b = self.lift(env, line, e[3], inner)
            cond = self.int_expr(env, a, line)
            bval = self.p.expr("NE", self.int_expr(env, b, line), self.p.const(0))
            if e[1] == "||":
                out.append(("if", cond, [("set", slot, self.p.const(1), line)],
                            inner + [("set", slot, bval, line)], line))
            else:
                out.append(("if", cond, inner + [("set", slot, bval, line)],
                            [("set", slot, self.p.const(0), line)], line))
            return ("name", name)
        if isinstance(e, tuple):
            return tuple(self.lift(env, line, x, out) if isinstance(x, tuple) and contains_get(x) else x for x in e)
        return e

    def hp_assign(self, env, line, e):
        """hparams.F = v, hparams.F[i] = v (and op=), hparams.A = hparams.B."""
        p = self.p
        op, lhs, rhs = e[1], e[2], e[3]
        idx = -1
        if lhs[0] == "index":
            idx = self.int_expr(env, lhs[2], line)
            lhs = lhs[1]
        f = hparams_field_of(lhs)
        if f not in self.hp.fields:
            return None
        fid = self.hp.index(f)
        src = hparams_field_of(rhs)
        if idx < 0 and self.hp.fields[f][1] > 1:
            if op == "=" and src in self.hp.fields and self.hp.fields[src][1] > 1:
                return [("hpcopy", fid, self.hp.index(src), line)]
            return [("hpfill", fid, self.p.unknown, line)]  # a constant table: not read here
        v = self.int_expr(env, rhs, line)
        if op != "=":
            v = p.expr(BINOPS_KIND[op[:-1]], p.expr("HPF", fid, idx), v)
        return [("hpset", fid, idx, v, line)]

    def hp_call(self, env, line, e):
        """Statement-level calls of the hparams mode, or None."""
        p = self.p
        fn, args = e[1], e[2]
        if fn[0] == "member" and fn[1] == ("name", "hparams") and fn[2] in EFFECT_METHODS:
            a = [self.int_expr(env, x, line) for x in args] + [-1, -1]
            return [("hpcall", p.string(fn[2]), a[0], a[1], line)]
        if fn == ("name", "std::fill") and len(args) == 3:
            f = hparams_field_of(args[0][1][1]) if args[0][0] == "call" and args[0][1][0] == "member" else None
            if f in self.hp.fields:
                return [("hpfill", self.hp.index(f), self.int_expr(env, args[2], line), line)]
            return []
        if fn[0] == "member" and fn[1][0] == "member" and hparams_field_of(fn[1]) in self.hp.fields:
            fid = self.hp.index(hparams_field_of(fn[1]))
            if fn[2] == "reset" and not args:
                return [("hpfill", fid, p.const(0), line)]
            if fn[2] == "set" and len(args) == 1:
                return [("hpset", fid, self.int_expr(env, args[0], line), p.const(1), line)]
        if fn == ("name", "GGML_ASSERT") and args:
            return [("assert", self.int_expr(env, args[0], line), p.string(self.assert_text(line)), line,
                     self.path)]
        return None

    def assert_text(self, line):
        """The condition of the GGML_ASSERT on the source line, as the macro
        stringifies it (llama.cpp prints 'GGML_ASSERT(%s) failed')."""
        text = self.p.src.file_text(self.path)
        lines = text.split("\n")
        chunk = "\n".join(lines[line - 1:line + 6])
        i = chunk.find("GGML_ASSERT(")
        if i < 0:
            return "?"
        j, depth = i + len("GGML_ASSERT"), 0
        for k in range(j, len(chunk)):
            if chunk[k] == "(":
                depth += 1
            elif chunk[k] == ")":
                depth -= 1
                if depth == 0:
                    return " ".join(chunk[j + 1:k].split())
        return "?"

    def message(self, env, line, thrown, fallback):
        """(template, [int exprs]) of a thrown std::runtime_error: compile-time
        strings rendered in, each int argument an expression; '{arch}' stands
        for the architecture's name."""
        def strs(e):
            k = e[0]
            if k == "str":
                return e[1]
            if k == "bin" and e[1] == "+":
                return strs(e[2]) + strs(e[3])
            if k == "call" and e[1] in (("name", "arch_name"),) and not e[2]:
                return "{arch}"
            if k == "call" and e[1] == ("name", "std::string") and len(e[2]) == 1:
                return strs(e[2][0])
            if k == "call" and e[1][0] == "member" and e[1][2] in ("c_str", "str") and not e[2]:
                return strs(e[1][1])
            try:
                return self.kv_key(env, e, line).replace("%s", "{arch}")
            except Exception:  # noqa: BLE001 - any other string: unknown
                return "?"
        if thrown and thrown[0] == "call" and thrown[1] == ("name", "std::runtime_error") and len(thrown[2]) == 1:
            arg = thrown[2][0]
            if arg[0] == "call" and arg[1] == ("name", "format") and arg[2] and arg[2][0][0] == "str":
                fmt, rest = arg[2][0][1], arg[2][1:]
                out, ints, i = "", [], 0
                pieces = re.split(r"(%[-0-9.]*(?:l|ll|z)?[sdui])", fmt)
                for piece in pieces:
                    if re.fullmatch(r"%[-0-9.]*(?:l|ll|z)?[sdui]", piece) and i < len(rest):
                        a = rest[i]
                        i += 1
                        if piece.endswith("s"):
                            out += strs(a).replace("%", "%%")
                        else:
                            ints.append(self.int_expr(env, a, line))
                            out += "%" + ("u" if piece[-1] == "u" else "d")
                    else:
                        out += piece.replace("%%", "\x00").replace("%", "%%").replace("\x00", "%%")
                return out, ints[:3]
            return strs(arg).replace("%", "%%"), []
        return fallback.replace("%", "%%"), []


BINOPS_KIND = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD", "<<": "SHL", ">>": "SHR", "&": "BAND",
               "|": "BOR", "^": "BXOR", "&&": "LAND", "||": "LOR", "==": "EQ", "!=": "NE", "<": "LT", "<=": "LE",
               ">": "GT", ">=": "GE"}
