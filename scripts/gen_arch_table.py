#!/usr/bin/env python3
"""
gen_arch_table.py - writes src/arch_table.c, llama.cpp's own tensor table for
every architecture, from llama.cpp's source tree.

    scripts/gen_arch_table.py LLAMA_SRC_DIR OUT.c [--notes]
    scripts/gen_arch_table.py --inputs      (the paths below, one a line)

What it reads (paths relative to LLAMA_SRC_DIR, a v0.5.0 tree):
  src/llama-arch.h            the llm_arch and llm_tensor enums (their values)
  src/llama-arch.cpp          LLM_ARCH_NAMES (arch -> name), LLM_TENSOR_NAMES
                              (tensor -> "blk.%d.attn_q"), LLM_TENSOR_INFOS
                              (tensor -> input/repeating/output class and op),
                              LLM_KV_NAMES (the keys the runtime reads)
  ggml/include/ggml.h         the ggml_type values (output->type == GGML_TYPE_NVFP4)
  src/llama-model.cpp         llama_model_mapping (arch -> model class), the
                              helpers create_tensor_qkv / create_tensor_gate_up_exps,
                              the generic ".scale" pass of load_tensors,
                              load_hparams and load_swa_pattern, the case
                              labels of create_memory
  src/llama-model.h           LLAMA_LOAD_LOCALS, the model's members
  src/llama-model-loader.h    the create_tensor flags
  src/llama-hparams.h         struct llama_hparams: fields, types, initializers, methods
  include/llama.h             the enums hparams code compares with
  src/llama-graph.cpp         what llm_graph_context's members are (n_rot: hparams.n_rot())
  src/models/models.h         the model classes and whom they inherit from
  src/models/*.cpp            every load_arch_tensors with each create_tensor's
                              shape, every load_arch_hparams (with the file's
                              static helpers), and the GGML_ASSERTs of the graph
                              constructors that the hyperparameters decide

load_hparams and every load_arch_hparams are compiled the same way (the
ml.get_* readers, assignments to llama_hparams' fields, GGML_ASSERT, throw
with its formatted message; gen_arch_table_hparams.py), and so are the
graph constructors' hyperparameter asserts.  Every load_arch_tensors is
compiled into a small program (statements and
expressions, see src/arch.h) that src/arch.c runs against a GGUF file: the
create_tensor calls in order with their tensor, suffix, layer argument and
flags; if/else, for loops and a switch; int locals (flags, is_mtp, ...);
handles (layer.wq, output, ...) that later conditions test; lambdas and the
two helpers are inlined at their call sites.  What the source decides from
something the file alone does not say (most hparams, shapes, member
variables) compiles to "unknown"; src/arch.c resolves an unknown branch by
which of its tensors the file holds.  Nothing is hand-written here: the few
facts that cannot be read this way (hparams that rewrite the layer count)
live in src/arch.c with their source lines.

The output is deterministic; tests/arch regenerates it from the bundled
v0.5.0 tree and fails on any difference.  Python 3 standard library only.
"""

import glob
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_arch_table_cxx as cx  # noqa: E402
import gen_arch_table_hparams as hpx  # noqa: E402

# ------------------------------------------------------------------ source tables


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def enum_values(text, enum_name):
    """{NAME: value} of a C enum (implicit values counted, explicit honoured)."""
    m = re.search(r"enum\s+" + enum_name + r"\s*\{(.*?)\};", text, re.S)
    if not m:
        raise SystemExit(f"gen_arch_table: enum {enum_name} not found")
    return dict(hpx.enum_items(m.group(1), lambda text, nxt: int(text, 0)))


def map_entries(text, map_name):
    """[(key, value_text, line)] of a 'static const std::map<...> NAME = {...};'."""
    m = re.search(r"\b" + map_name + r"\s*=\s*\{", text)
    if not m:
        raise SystemExit(f"gen_arch_table: map {map_name} not found")
    start = m.end() - 1
    body = cx.balanced(text, start)
    first_line = text.count("\n", 0, start) + 1
    out = []
    for lm in re.finditer(r"\{\s*(\w+)\s*,\s*(.*?)\}\s*,?", body):
        line = first_line + body.count("\n", 0, lm.start())
        out.append((lm.group(1), lm.group(2).strip(), line))
    return out


def c_string(s):
    m = re.fullmatch(r'"((?:\\.|[^"\\])*)"', s.strip())
    if not m:
        raise SystemExit(f"gen_arch_table: not a string literal: {s}")
    return m.group(1)


class Sources:
    """The tables of llama-arch.{h,cpp}, ggml.h, llama-model.cpp and models.h."""

    def __init__(self, root):
        self.root = root
        arch_h = read(root, "src/llama-arch.h")
        arch_cpp = read(root, "src/llama-arch.cpp")
        self.arch_enum = enum_values(arch_h, "llm_arch")
        self.tensor_enum = enum_values(arch_h, "llm_tensor")
        self.ggml_types = enum_values(read(root, "ggml/include/ggml.h"), "ggml_type")
        self.arch_names = {k: c_string(v) for k, v, _ in map_entries(arch_cpp, "LLM_ARCH_NAMES")}
        self.tensor_names = {}
        self.tensor_name_line = {}
        for k, v, line in map_entries(arch_cpp, "LLM_TENSOR_NAMES"):
            self.tensor_names[k] = c_string(v)
            self.tensor_name_line[k] = line
        self.tensor_infos = {}
        for k, v, line in map_entries(arch_cpp, "LLM_TENSOR_INFOS"):
            mm = re.fullmatch(r"\{\s*LLM_TENSOR_LAYER_(\w+)\s*,\s*GGML_OP_(\w+)\s*", v)
            if not mm:
                raise SystemExit(f"gen_arch_table: llama-arch.cpp:{line}: cannot read {v}")
            self.tensor_infos[k] = (mm.group(1), mm.group(2), line)
        self.kv_names = {k: c_string(v) for k, v, _ in map_entries(arch_cpp, "LLM_KV_NAMES")}
        self.model_cpp = read(root, "src/llama-model.cpp")
        self.models_h = read(root, "src/models/models.h")
        self.model_files = {}
        for path in sorted(glob.glob(os.path.join(root, "src/models/*.cpp"))):
            self.model_files["src/models/" + os.path.basename(path)] = read(root, os.path.relpath(path, root))
        self._hparams_cache = {}
        hp_h = read(root, "src/llama-hparams.h")
        self.hparams_init = {}
        for m in re.finditer(r"^\s*(?:uint32_t|int32_t|int64_t|uint64_t|int|bool)\s+(\w+)\s*=\s*([^;,]+);", hp_h, re.M):
            v = m.group(2).strip()
            if re.fullmatch(r"-?\d+[uU]?", v):
                self.hparams_init[m.group(1)] = int(v.rstrip("uU"))
            elif v in ("true", "false"):
                self.hparams_init[m.group(1)] = int(v == "true")
        base_text, _ = cx.find_function(self.model_cpp, "llama_model_base::load_hparams")
        self.base_hparams_written = set(re.findall(r"hparams\.(\w+)\s*(?:=[^=]|\+=|-=|\|=)", base_text)) | \
            set(re.findall(r"get_\w+\(\s*LLM_KV_\w+\s*,\s*hparams\.(\w+)", base_text))
        self.arch_class = self._mapping()
        self.loader_defs = {}  # class -> file of its load_arch_tensors definition
        for path, text in self.model_files.items():
            for m in re.finditer(r"\b(llama_model_\w+)::load_arch_tensors\s*\(", text):
                self.loader_defs.setdefault(m.group(1), path)
        self.bases = dict(re.findall(r"struct\s+(llama_model_\w+)\s*:\s*public\s+(\w+)", self.models_h))
        model_h = read(root, "src/llama-model.h")
        m = re.search(r"#define LLAMA_LOAD_LOCALS((?:.*\\\n)*.*)", model_h)
        macro = m.group(1).replace("\\\n", "\n")
        self.load_locals = cx.parse_body("{" + macro + "}", model_h.count("\n", 0, m.start()) + 1, "src/llama-model.h")
        body = cx.balanced(model_h, model_h.index("{", model_h.index("\nstruct llama_model {")))
        self.arch_predicates = {}
        for fn in ("llm_arch_is_recurrent", "llm_arch_is_hybrid", "llm_arch_is_diffusion"):
            fn_body, _ = cx.find_function(arch_cpp, fn)
            self.arch_predicates[fn] = re.findall(r"case\s+(LLM_ARCH_\w+)\s*:", fn_body)
        m = re.search(r"LLAMA_ROPE_SCALING_TYPES = \{(.*?)\};", self.model_cpp, re.S)
        self.rope_scaling_types = [(v, n) for v, n in re.findall(r"\{\s*(LLAMA_ROPE_SCALING_TYPE_\w+)\s*,\s*\"(\w+)\"\s*\}", m.group(1))]
        self.model_members = {n: t.strip() for t, n in re.findall(r"^\s+([\w:<>, ]+?)\s+(\w+)\s*(?:=[^;]*)?;", body, re.M)}

    def file_text(self, path):
        if path in self.model_files:
            return self.model_files[path]
        return read(self.root, path)

    def _mapping(self):
        m = re.search(r"static llama_model \* llama_model_mapping\(", self.model_cpp)
        body, _ = cx.find_function(self.model_cpp[m.start():], "llama_model_mapping")
        out, pending = {}, []
        for tok in re.finditer(r"case\s+(LLM_ARCH_\w+)\s*:|return\s+new\s+(\w+)\s*\(", body):
            if tok.group(1):
                pending.append(tok.group(1))
            else:
                for a in pending:
                    out[a] = tok.group(2)
                pending = []
        return out

    def hparams_of(self, cls):
        """{field: (key template, required, default)} for the hparams that
        cls's load_arch_hparams reads with one plain top-level
        ml.get_key(LLM_KV_X, hparams.F[, false]) and nothing else writes
        (neither that function elsewhere nor the base load_hparams); the
        default is the field's initializer in src/llama-hparams.h.  A field
        with an initializer that no one writes is that constant (key None)."""
        if cls in self._hparams_cache:
            return self._hparams_cache[cls]
        known = {}
        c, found = cls, None
        while c and c.startswith("llama_model_") and c != "llama_model_base":
            for path, text in self.model_files.items():
                r = cx.find_function(text, c + "::load_arch_hparams") if c + "::load_arch_hparams" in text else None
                if r:
                    found = (path, r)
                    break
            if found:
                break
            c = self.bases.get(c)
        if found:
            path, (text, line) = found
            try:
                body = cx.parse_body(text, line, path)
            except SyntaxError:
                body = None
            if body:
                writes = {}
                for top, node in hparams_writes(body):
                    writes.setdefault(node[0], []).append((top, node))
                for field, value in self.hparams_init.items():
                    if field not in writes and field not in self.base_hparams_written:
                        known[field] = (None, False, value)
                for field, ws in writes.items():
                    if len(ws) != 1 or field in self.base_hparams_written:
                        continue
                    top, (_, kv, required) = ws[0]
                    if not top or kv is None or kv not in self.kv_names:
                        continue
                    if not required and field not in self.hparams_init:
                        continue
                    known[field] = (self.kv_names[kv], required, self.hparams_init.get(field, 0))
        self._hparams_cache[cls] = known
        return known

    def hparams_class(self, cls):
        """The class whose load_arch_hparams cls runs (itself or a base)."""
        c = cls
        while c and c.startswith("llama_model_") and c != "llama_model_base":
            for text in self.model_files.values():
                if c + "::load_arch_hparams" in text and cx.find_function(text, c + "::load_arch_hparams"):
                    return c
            c = self.bases.get(c)
        return None

    def hparams_def(self, cls):
        """(file, body text, first line) of cls::load_arch_hparams."""
        for path, text in self.model_files.items():
            if cls + "::load_arch_hparams" in text:
                r = cx.find_function(text, cls + "::load_arch_hparams")
                if r:
                    return path, r[0], r[1]
        raise SystemExit(f"gen_arch_table: no load_arch_hparams for {cls}")

    def loader_of(self, cls):
        """(file, body_text, first_line, defining_class) of cls's load_arch_tensors."""
        c = cls
        while c and c.startswith("llama_model_") and c != "llama_model_base":
            path = self.loader_defs.get(c)
            r = cx.find_function(self.model_files[path], c + "::load_arch_tensors") if path else None
            if r:
                return path, r[0], r[1], c
            c = self.bases.get(c)
        return None

    def params_of(self, text, qualified, declaration=False):
        """[(type, name)] of a function definition's parameters; with
        declaration, [(type, name, default text or None)] of its declaration
        (where C++ keeps the default arguments)."""
        m = re.search(r"\b" + re.escape(qualified) + r"\s*\((.*?)\)\s*" + (";" if declaration else r"\{"), text, re.S)
        out = []
        for p in m.group(1).split(","):
            p = p.strip()
            mm = re.fullmatch(r"(.*?)(\w+)(?:\s*=\s*(.+))?", p, re.S)
            out.append((mm.group(1).strip(), mm.group(2), mm.group(3)) if declaration else
                       (mm.group(1).strip(), mm.group(2)))
        return out


# ------------------------------------------------------------------ program

EXPR_KINDS = [
    "CONST", "UNKNOWN", "LOCAL", "NLAYER", "NLAYER_ALL", "NLAYER_NEXTN", "LOAD_MTP", "ARCH",
    "HANDLE", "HTYPE", "WEIGHT", "HPF", "HPM", "VOCAB", "CAST", "STRKEY",
    "NOT", "NEG", "BNOT",
    "ADD", "SUB", "MUL", "DIV", "MOD", "SHL", "SHR", "BAND", "BOR", "BXOR",
    "LAND", "LOR", "EQ", "NE", "LT", "LE", "GT", "GE", "COND",
]
BINOPS = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD", "<<": "SHL", ">>": "SHR", "&": "BAND",
          "|": "BOR", "^": "BXOR", "&&": "LAND", "||": "LOR", "==": "EQ", "!=": "NE", "<": "LT", "<=": "LE",
          ">": "GT", ">=": "GE"}
IGNORED_CALLS = {"GGML_ASSERT", "GGML_UNUSED", "GGML_ABORT", "LLAMA_LOG_INFO", "LLAMA_LOG_WARN", "LLAMA_LOG_DEBUG",
                 "LLAMA_LOG_ERROR", "std::fill", "std::copy", "format", "GGML_LOG_WARN"}


class CompileError(Exception):
    pass


class Program:
    """Expression pool, statement trees, strings and handle slots shared by
    every function of the table."""

    def __init__(self, src):
        self.src = src
        self.exprs, self.expr_index = [], {}
        self.strings, self.string_index = [], {}
        self.handles, self.handle_index = [], {}
        self.notes = []  # (file, line, text): what compiled to "unknown"
        loader_h = read(src.root, "src/llama-model-loader.h")
        self.flags = {n: 1 << int(b) for n, b in re.findall(r"static const int (TENSOR_\w+)\s*=\s*1\s*<<\s*(\d+);", loader_h)}
        need = {"TENSOR_NOT_REQUIRED", "TENSOR_DUPLICATED", "TENSOR_SKIP", "TENSOR_SKIP_IF_VIRTUAL",
                "TENSOR_ALLOW_RESHAPE", "TENSOR_READ_LAZY"}
        if set(self.flags) != need:
            raise SystemExit(f"gen_arch_table: llama-model-loader.h flags are {sorted(self.flags)}")
        self.unknown = self.expr("UNKNOWN")
        self.minus_one = self.expr("CONST", v=-1)
        self.hp = hpx.HparamsModel(src.root)
        self.mode = "loader"
        self.shapes, self.shape_index = [], {}
        self.graph_failed = []

    def shape(self, dims):
        if dims not in self.shape_index:
            self.shape_index[dims] = len(self.shapes)
            self.shapes.append(dims)
        return self.shape_index[dims]

    def expr(self, kind, a=-1, b=-1, c=-1, v=0):
        key = (kind, a, b, c, v)
        if key not in self.expr_index:
            self.expr_index[key] = len(self.exprs)
            self.exprs.append(key)
        return self.expr_index[key]

    def const(self, v):
        return self.expr("CONST", v=v)

    def string(self, s):
        if s not in self.string_index:
            self.string_index[s] = len(self.strings)
            self.strings.append(s)
        return self.string_index[s]

    def handle(self, name):
        if name not in self.handle_index:
            self.handle_index[name] = len(self.handles)
            self.handles.append(name)
        return self.handle_index[name]

    def is_unknown(self, e):
        return self.exprs[e][0] == "UNKNOWN"


class Env:
    """A C++ scope: name -> binding, with the enclosing scope as parent."""

    def __init__(self, parent=None):
        self.parent, self.names, self.types, self.decls = parent, {}, {}, {}

    def get(self, name):
        e = self
        while e:
            if name in e.names:
                return e.names[name]
            e = e.parent
        return None

    def set(self, name, value):
        self.names[name] = value

    def set_type(self, name, ctype, decl=None):
        self.types[name] = ctype
        if decl is not None:
            self.decls[name] = decl

    def _find(self, table, name):
        e = self
        while e:
            if name in e.names or name in getattr(e, table):
                return getattr(e, table).get(name)
            e = e.parent
        return None

    def type_of(self, name):
        return self._find("types", name)

    def decl_of(self, name):
        return self._find("decls", name)


class Function:
    """One compiled function: a load_arch_tensors or the generic pass."""

    def __init__(self, prog, name, path, line):
        self.prog, self.name, self.path, self.line = prog, name, path, line
        self.n_locals = 0
        self.body = []
        self.handle_members = set()
        self.kind = "LOADER"

    def local(self):
        self.n_locals += 1
        return self.n_locals - 1


class Compiler(hpx.HparamsMixin):
    """Compiles one function's syntax tree into statements.  mode "loader":
    a load_arch_tensors (create_tensor calls, their shapes); "hparams":
    load_hparams / load_arch_hparams (ml.get_* calls, hparams fields)."""

    def __init__(self, prog, fn, handle_members, helpers, mode="loader"):
        self.p, self.fn = prog, fn
        self.hp = prog.hp
        self.mode = mode
        self.handle_members = handle_members
        self.helpers = helpers  # name -> (params, body, path)
        self.path = fn.path
        self.depth = 0
        prog.mode = mode

    def error(self, line, what):
        return CompileError(f"{self.path}:{line}: {what}")

    # -------------------------------------------------------- expressions

    def name_value(self, env, name, line):
        b = env.get(name)
        if b is not None:
            return b
        p = self.p
        if name in ("nullptr", "NULL", "false"):
            return ("int", p.const(0))
        if name == "true":
            return ("int", p.const(1))
        if name == "arch":
            return ("int", p.expr("ARCH"))
        short = name.split("::")[-1]
        if short in p.flags and (name == short or name.startswith("llama_model_loader::")):
            return ("int", p.const(p.flags[short]))
        if name in p.src.arch_enum:
            return ("int", p.const(p.src.arch_enum[name]))
        if name in p.src.ggml_types:
            return ("int", p.const(p.src.ggml_types[name]))
        if name in self.hp.enums:
            return ("int", p.const(self.hp.enums[name]))
        if name in self.hp.defines:
            return ("int", p.const(self.hp.defines[name]))
        if name in p.src.tensor_enum:
            return ("tensor", name)
        if name in self.handle_members:
            return ("hnd", p.handle(name), p.minus_one)
        return ("unknown", name)

    def int_expr(self, env, e, line):
        """The expression node of an int/bool/pointer-truth expression."""
        p = self.p
        k = e[0]
        if k == "num":
            return p.const(e[1])
        if k in ("float", "str", "init", "lambda"):
            return p.unknown
        if k == "name":
            b = self.name_value(env, e[1], line)
            return self.binding_int(b, line, e[1])
        if k == "cast":
            return self.int_expr(env, e[2], line)
        if k == "un":
            op = e[1]
            a = self.int_expr(env, e[2], line)
            if op == "!":
                return p.expr("NOT", a)
            if op == "-":
                return p.expr("NEG", a)
            if op == "~":
                return p.expr("BNOT", a)
            if op == "+":
                return a
            return p.unknown
        if k == "bin":
            a = self.int_expr(env, e[2], line)
            b = self.int_expr(env, e[3], line)
            typed = self.typed_bin(env, e, line, a, b)
            return typed if typed is not None else p.expr(BINOPS[e[1]], a, b)
        if k == "cond":
            return p.expr("COND", self.int_expr(env, e[1], line), self.int_expr(env, e[2], line),
                          self.int_expr(env, e[3], line))
        if k == "member":
            return self.member_int(env, e, line)
        if k == "index":
            f = hpx.hparams_field_of(e[1])
            if f in self.hp.fields and self.hp.fields[f][1] > 1:
                return p.expr("HPF", self.hp.index(f), self.int_expr(env, e[2], line))
            return p.unknown
        if k == "call":
            return self.call_int(env, e, line)
        raise CompileError(f"{self.path}:{line}: cannot compile expression {e[0]}")

    def binding_int(self, b, line, what):
        p = self.p
        kind = b[0]
        if kind == "int":
            return b[1]
        if kind == "local":
            return p.expr("LOCAL", b[1])
        if kind == "hnd":
            return p.expr("HANDLE", b[1], b[2])
        if kind == "unknown":
            return p.unknown
        if kind == "tensor":
            return p.const(p.src.tensor_enum[b[1]])
        if kind == "lazy":
            return self.int_expr(b[2], b[1], line)
        raise CompileError(f"{self.path}:{line}: '{what}' ({kind}) used as a number")

    def member_int(self, env, e, line):
        p = self.p
        _, base, name, arrow = e
        if base == ("name", "hparams"):
            if self.mode == "loader" and name == "n_layer_all":
                return p.expr("NLAYER_ALL")
            if self.mode == "loader" and name == "n_layer_nextn":
                return p.expr("NLAYER_NEXTN")
            if name in self.hp.fields and self.hp.fields[name][1] == 1:
                return p.expr("HPF", self.hp.index(name), -1)
            return p.unknown
        if base == ("name", "ml") and name == "load_mtp":
            return p.expr("LOAD_MTP")
        h = self.lvalue(env, e, line, quiet=True)
        if h and h[0] == "hnd":
            return p.expr("HANDLE", h[1], h[2])
        if name == "type" and arrow:
            h = self.lvalue(env, base, line, quiet=True)
            if h and h[0] == "hnd":
                return p.expr("HTYPE", h[1], h[2])
        return p.unknown

    def call_int(self, env, e, line):
        p = self.p
        fn, args = e[1], e[2]
        if fn[0] == "member" and fn[1] == ("name", "hparams"):
            if fn[2] == "n_layer" and not args and self.mode == "loader":
                return p.expr("NLAYER")
            if fn[2] in self.hp.methods and fn[2] not in hpx.EFFECT_METHODS and len(args) <= 1:
                return p.expr("HPM", p.string(fn[2]), self.int_expr(env, args[0], line) if args else -1)
            return p.unknown
        if fn[0] == "member" and fn[1] == ("name", "vocab") and fn[2] in ("n_tokens", "n_token_types") and not args:
            return p.expr("VOCAB", 0 if fn[2] == "n_tokens" else 1)
        if fn == ("member", ("name", "ml"), "get_arch", False) and not args:
            return p.expr("ARCH")
        if fn[0] == "name" and fn[1] in p.src.arch_predicates and len(args) == 1:
            # llm_arch_is_recurrent(arch) and its siblings (src/llama-arch.cpp): a list of archs
            a = self.int_expr(env, args[0], line)
            c = p.const(0)
            for arch in p.src.arch_predicates[fn[1]]:
                c = p.expr("LOR", c, p.expr("EQ", a, p.const(p.src.arch_enum[arch])))
            return c
        if fn == ("name", "llama_rope_scaling_type_from_string") and len(args) == 1 and args[0][0] == "name":
            b = env.get(args[0][1])  # the name a string key holds, or the string's initial value
            if b and b[0] == "strkey":
                values = {n: self.hp.enums[v] for v, n in p.src.rope_scaling_types}
                return p.expr("STRKEY", p.string(b[1]), v=values.get(b[2], self.hp.enums["LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED"]))
        if fn[0] == "member" and fn[1] in (("name", "ml"),) and fn[2] in ("get_weight", "get_tensor_meta"):
            return self.weight_expr(env, args[0], line)
        if fn[0] == "member" and fn[2] in ("c_str", "str") and not args:
            return p.unknown
        if fn in (("name", "std::max"), ("name", "std::min")) and len(args) == 2:
            a = self.int_expr(env, args[0], line)
            b = self.int_expr(env, args[1], line)
            return p.expr("COND", p.expr("GT" if fn[1] == "std::max" else "LT", a, b), a, b)
        if fn[0] == "name" and fn[1] in ("create_tensor",):
            raise CompileError(f"{self.path}:{line}: create_tensor inside an expression")
        return p.unknown

    def str_parts(self, env, e, line):
        """A string expression as [str | expr node]."""
        k = e[0]
        if k == "str":
            return [e[1]]
        if k == "bin" and e[1] == "+":
            return self.str_parts(env, e[2], line) + self.str_parts(env, e[3], line)
        if k == "name":
            b = env.get(e[1])
            if b and b[0] == "str":
                return list(b[1])
        if k == "call" and e[1] == ("name", "std::to_string") and len(e[2]) == 1:
            return [self.int_expr(env, e[2][0], line)]
        if k == "call" and e[1][0] == "member" and e[1][2] in ("c_str", "str") and not e[2]:
            return self.str_parts(env, e[1][1], line)
        if (k == "call" and e[1] == ("name", "tn")) or (k == "name" and (env.get(e[1]) or ("",))[0] == "tnval"):
            t = self.tn_of(env, e, line)
            parts = []
            segs = t["template"].split("%d")
            ints = [t["bid"], t["xid"]]
            for i, seg in enumerate(segs):
                parts.append(seg)
                if i < len(segs) - 1:
                    parts.append(ints[i])
            if t["suffix"] is not None:
                parts.append("." + t["suffix"])
            return parts
        raise CompileError(f"{self.path}:{line}: cannot read string {render(e)}")

    def weight_expr(self, env, e, line):
        """ml.get_weight(name) / get_tensor_meta(name): is the tensor in the file."""
        parts = self.str_parts(env, e, line)
        fmt, args = "", []
        for part in parts:
            if isinstance(part, str):
                fmt += part.replace("%", "%%")
            else:
                fmt += "%d"
                args.append(part)
        if len(args) > 2:
            raise CompileError(f"{self.path}:{line}: name with more than two numbers")
        args += [-1] * (2 - len(args))
        return self.p.expr("WEIGHT", self.p.string(fmt), args[0], args[1])

    # -------------------------------------------------------- tn(), lvalues

    def tn(self, env, call, line):
        args = call[2]
        if not args:
            raise CompileError(f"{self.path}:{line}: tn() without a tensor")
        t = args[0]
        b = self.name_value(env, t[1], line) if t[0] == "name" else None
        if not b or b[0] != "tensor":
            raise CompileError(f"{self.path}:{line}: tn() of {render(t)}")
        tensor = b[1]
        rest = args[1:]
        suffix = None
        if rest and rest[0][0] == "str":
            suffix = rest[0][1]
            rest = rest[1:]
        elif rest and rest[0][0] == "name" and rest[0][1] in ("nullptr", "NULL"):
            rest = rest[1:]
        bid = self.int_expr(env, rest[0], line) if len(rest) > 0 else -1
        xid = self.int_expr(env, rest[1], line) if len(rest) > 1 else -1
        if tensor not in self.p.src.tensor_names:
            raise CompileError(f"{self.path}:{line}: {tensor} has no name in LLM_TENSOR_NAMES")
        return {"tensor": tensor, "suffix": suffix, "bid": bid, "xid": xid,
                "template": self.p.src.tensor_names[tensor]}

    def tn_of(self, env, e, line):
        """tn(...) itself, or a local bound to one (const auto x = tn(...))."""
        if e[0] == "name":
            b = env.get(e[1])
            if b and b[0] == "tnval":
                return b[1]
        if e[0] != "call" or e[1] != ("name", "tn"):
            raise CompileError(f"{self.path}:{line}: create_tensor of {render(e)}")
        return self.tn(env, e, line)

    def layer_alias(self, env, e, line):
        """('layer', node, prefix) for 'layer', 'layers[i]', 'layer.nextn', ..."""
        if e[0] == "name":
            b = env.get(e[1])
            if b and b[0] == "layer":
                return b
            return None
        if e[0] == "index" and e[1] == ("name", "layers"):
            return ("layer", self.int_expr(env, e[2], line), "")
        if e[0] == "member":
            base = self.layer_alias(env, e[1], line)
            if base:
                return ("layer", base[1], base[2] + e[2] + ".")
        return None

    def lvalue(self, env, e, line, quiet=False):
        """('hnd', slot, layer_node) | ('local', slot) | None."""
        if e[0] == "name":
            b = self.name_value(env, e[1], line)
            if b[0] in ("hnd", "local"):
                return b
            return None
        if e[0] == "member":
            base = self.layer_alias(env, e[1], line)
            if base:
                return ("hnd", self.p.handle("layer." + base[2] + e[2]), base[1])
        return None

    # -------------------------------------------------------- statements

    def block(self, env, stmts, ctx):
        out = []
        for line, s in stmts:
            out += self.stmt(env, line, s, ctx)
        return out

    def stmt(self, env, line, s, ctx):
        p = self.p
        k = s[0]
        if k == "block":
            return self.block(Env(env), s[1], ctx)
        if k == "empty":
            return []
        if k == "rangefor" and self.mode == "graph":
            return []
        if k == "throw":  # llama.cpp refuses the file here
            text, args = self.message(env, line, s[2] if len(s) > 2 else None, s[1])
            return [("fail", p.string(text), line, self.path, args)]
        if k == "load_locals":  # LLAMA_LOAD_LOCALS, src/llama-model.h
            env.set("n_layer", ("int", p.expr("NLAYER")))
            env.set("n_layer_all", ("int", p.expr("NLAYER_ALL")))
            env.set("n_layer_nextn", ("int", p.expr("NLAYER_NEXTN")))
            for name in ("n_layer", "n_layer_all", "n_layer_nextn"):
                env.set_type(name, "I32")
            out = []
            for ln, st in p.src.load_locals[1]:  # the macro's declarations
                if st[0] == "decl" and st[2][0][0] not in ("n_layer", "n_layer_all", "n_layer_nextn"):
                    out += self.stmt(env, ln, st, ctx)
            return out
        if k == "try":  # the catch only runs on a shape mismatch, which this table does not check
            return self.block(Env(env), s[1][1], ctx)
        if k == "decl":
            out = []
            for name, init in s[2]:
                out += self.decl(env, line, s[1], name, init, ctx)
            return out
        if k == "expr":
            return self.expr_stmt(env, line, s[1], ctx)
        if k == "if":
            return self.if_stmt(env, line, s, ctx)
        if k == "for":
            return self.for_stmt(env, line, s, ctx)
        if k == "rangefor":
            if contains_create(s[1]):
                raise CompileError(f"{self.path}:{line}: create_tensor in a range-based for")
            if self.mode != "hparams":
                return []
            # over a vector the table does not keep: the body runs an unknown number of times
            scope = Env(env)
            for name, _ in s[2][2]:
                scope.set(name, ("unknown", name))
            return [("if", p.unknown, self.stmt(scope, s[1][0], s[1][1], ctx), [], line)]
        if k == "switch":
            return self.switch_stmt(env, line, s, ctx)
        if k == "return":
            if ctx.get("target") and s[1] is not None:
                return self.assign_handle(env, line, ctx["target"], s[1], ctx) + [("return", line)]
            return [("return", line)]
        if k in ("break", "continue"):
            if ctx.get("in_switch") and k == "break":
                raise CompileError(f"{self.path}:{line}: break inside a switch case body")
            return [(k, line)]
        raise CompileError(f"{self.path}:{line}: statement {k} not supported")

    def decl(self, env, line, ty, name, init, ctx):
        p = self.p
        env.set_type(name, hpx.ctype_of_text(ty, self.hp.enum_types), ty)
        if init is not None and init[0] == "lambda":
            env.set(name, ("lambda", init[1], init[2], env))
            return []
        pre = []
        if self.mode == "hparams" and init is not None and hpx.contains_get(init):
            init = self.lift(env, line, init, pre)
        if "std::string" in ty and not ("vector" in ty or "array" in ty):
            try:
                if self.mode == "hparams" and init is None:
                    raise CompileError("a string the loader fills")
                if init is not None and init[0] == "ctor" and len(init[1]) == 1:
                    init = init[1][0]  # std::string s("text")
                env.set(name, ("str", self.str_parts(env, init, line) if init else [""]))
            except CompileError:
                if self.mode != "hparams":
                    raise
                env.set(name, ("unknown", name))  # a string the loader reads: its value is not kept
            return pre
        if "llm_kv" in ty.split() and init is not None and init[0] == "name":
            env.set(name, ("kv", self.kv_key(env, init, line)))
            return pre
        if init is not None and "&" in ty.split():
            alias = self.layer_alias(env, init, line)
            if alias:
                slot = self.fn.local()
                env.set(name, ("layer", p.expr("LOCAL", slot), alias[2]))
                return [("set", slot, alias[1], line)]
        if init is not None and init[0] == "call" and init[1] == ("name", "tn"):
            env.set(name, ("tnval", self.tn(env, init, line)))
            return []
        if init is not None and init[0] == "name" and init[1] in p.src.tensor_enum:
            env.set(name, ("tensor", init[1]))
            return []
        if init is not None and is_create(init):
            slot = p.handle(f"{self.fn.name}:{name}@{line}")
            env.set(name, ("hnd", slot, p.minus_one))
            return self.create(env, line, init, ("hnd", slot, p.minus_one), ctx)
        if init is not None and init[0] == "call" and self.lambda_of(env, init) is not None:
            slot = p.handle(f"{self.fn.name}:{name}@{line}")
            env.set(name, ("hnd", slot, p.minus_one))
            return self.inline_lambda(env, line, init, ("hnd", slot, p.minus_one), ctx)
        if re.search(r"\b(float|double)\b", ty) or "vector" in ty or "std::array" in ty:
            env.set(name, ("unknown", name))
            return []
        if "*" in ty.split() and init is not None and init[0] == "call" and init[1][0] == "member" \
                and init[1][2] in ("get_weight", "get_tensor_meta"):
            env.set(name, ("int", self.weight_expr(env, init[2][0], line)))
            return []
        if "*" in ty.split() or (init is not None and contains_create(init)):
            if init is not None and contains_create(init):
                raise CompileError(f"{self.path}:{line}: cannot compile declaration of {name}")
            env.set(name, ("unknown", name))
            return []
        if init is None or init[0] == "ctor":
            node = p.const(0)
        else:
            node = self.int_expr(env, init, line)
            t = env.type_of(name)
            if t in ("I32", "U32", "BOOL") and self.etype(env, init) != t:
                node = self.cast(node, t)
        if "const" in ty.split() and not refers_to_state(p, node):
            # a constant of the file (or of nothing known): read where it is used
            env.set(name, ("int", node))
            return pre
        slot = self.fn.local()
        env.set(name, ("local", slot))
        return pre + [("set", slot, node, line)]

    def expr_stmt(self, env, line, e, ctx):
        p = self.p
        k = e[0]
        if self.mode == "graph":
            return self.graph_stmt(env, line, e, ctx)
        if self.mode == "hparams":
            out = self.hparams_stmt(env, line, e, ctx)
            if out is not None:
                return out
        if k == "assign":
            op, lhs, rhs = e[1], e[2], e[3]
            target = self.lvalue(env, lhs, line)
            if target and target[0] == "hnd":
                if op != "=":
                    raise CompileError(f"{self.path}:{line}: {op} on a tensor handle")
                return self.assign_handle(env, line, target, rhs, ctx)
            if target and target[0] == "local":
                val = self.int_expr(env, rhs, line)
                if op != "=":
                    val = p.expr(BINOPS[op[:-1]], p.expr("LOCAL", target[1]), val)
                return [("set", target[1], val, line)]
            if contains_create(rhs) or self.has_lambda_call(env, rhs):
                raise CompileError(f"{self.path}:{line}: cannot assign to {render(lhs)}")
            return []
        if k in ("un", "post") and e[1] in ("++", "--"):
            target = self.lvalue(env, e[2], line)
            if target and target[0] == "local":
                op = "ADD" if e[1] == "++" else "SUB"
                return [("set", target[1], p.expr(op, p.expr("LOCAL", target[1]), p.const(1)), line)]
            return []
        if k == "call":
            if is_create(e):
                return self.create(env, line, e, None, ctx)
            fn = e[1]
            if fn == ("name", "GGML_ASSERT") and e[2] and self.mode == "loader":  # llama.cpp aborts when false
                return [("assert", self.int_expr(env, e[2][0], line), p.string(self.assert_text(line)), line,
                         self.path)]
            if fn == ("name", "GGML_ABORT"):  # llama.cpp aborts here
                text = e[2][0][1] if e[2] and e[2][0][0] == "str" else ""
                return [("fail", p.string(text), line, self.path)]
            if fn[0] == "name" and fn[1] in self.helpers:
                return self.inline_helper(env, line, e, ctx)
            if self.lambda_of(env, e) is not None:
                return self.inline_lambda(env, line, e, None, ctx)
            if fn[0] == "name" and fn[1] in IGNORED_CALLS or not contains_create(e):
                return []
            raise CompileError(f"{self.path}:{line}: call {render(fn)} with create_tensor inside")
        if contains_create(e):
            raise CompileError(f"{self.path}:{line}: create_tensor in {k}")
        return []

    def hparams_stmt(self, env, line, e, ctx):
        """An expression statement of load_hparams / load_arch_hparams, or
        None when the generic rules apply (locals, ignored calls)."""
        pre = []
        if hpx.contains_get(e):
            if hpx.is_get_call(e):
                return self.getkey(env, line, e, -1)
            e = self.lift(env, line, e, pre)
        k = e[0]
        if k == "assign":
            out = self.hp_assign(env, line, e)
            if out is not None:
                return pre + out
            return pre + self.expr_stmt_generic(env, line, e, ctx)
        if k in ("un", "post") and e[1] in ("++", "--") and hpx.hparams_field_of(e[2]) in self.hp.fields:
            return pre + self.hp_assign(env, line, ("assign", e[1][0] + "=", e[2], ("num", 1)))
        if k == "call":
            out = self.hp_call(env, line, e)
            if out is not None:
                return pre + out
            fn = e[1]
            if fn == ("name", "load_arch_hparams"):
                return pre + [("callarch", line)]
            if fn[0] == "name" and fn[1] in self.helpers:
                return pre + self.inline_helper(env, line, e, ctx)
        return pre + self.expr_stmt_generic(env, line, e, ctx) if pre else None

    def graph_stmt(self, env, line, e, ctx):
        """An expression statement of a graph constructor: its GGML_ASSERTs
        that the hyperparameters decide, and the int locals they read."""
        k = e[0]
        if k == "call" and e[1] == ("name", "GGML_ASSERT") and e[2]:
            c = self.int_expr(env, e[2][0], line)
            if has_unknown(self.p, c):
                return []
            return [("assert", c, self.p.string(self.assert_text(line)), line, self.path)]
        target = self.lvalue(env, e[2], line, quiet=True) if k in ("assign", "un", "post") and len(e) > 2 else None
        if target and target[0] == "local":
            return self.expr_stmt_generic(env, line, e, ctx)
        return []

    def expr_stmt_generic(self, env, line, e, ctx):
        mode, self.mode = self.mode, "generic"
        try:
            return self.expr_stmt(env, line, e, ctx)
        finally:
            self.mode = mode

    def assign_handle(self, env, line, target, rhs, ctx):
        """target = rhs, where rhs is create_tensor(...), a lambda call, a
        handle, nullptr or a ?: of those."""
        if is_create(rhs):
            return self.create(env, line, rhs, target, ctx)
        if rhs[0] == "call" and self.lambda_of(env, rhs) is not None:
            return self.inline_lambda(env, line, rhs, target, ctx)
        if rhs[0] == "cond":
            c = self.int_expr(env, rhs[1], line)
            return [("if", c, self.assign_handle(env, line, target, rhs[2], ctx),
                     self.assign_handle(env, line, target, rhs[3], ctx), line)]
        if rhs[0] == "name" and rhs[1] in ("nullptr", "NULL"):
            return [("hset", target[1], target[2], -1, -1, line)]
        src = self.lvalue(env, rhs, line)
        if src and src[0] == "hnd":
            return [("hset", target[1], target[2], src[1], src[2], line)]
        if contains_create(rhs):
            raise CompileError(f"{self.path}:{line}: cannot compile {render(rhs)}")
        return []

    def create(self, env, line, call, target, ctx):
        args = call[2]
        if len(args) != 3:
            raise CompileError(f"{self.path}:{line}: create_tensor with {len(args)} arguments")
        t = self.tn_of(env, args[0], line)
        flags = self.int_expr(env, args[2], line)
        hslot, hlayer = (target[1], target[2]) if target else (-1, -1)
        shape = None  # the dimensions check_tensor_dims compares, when written out
        if args[1][0] == "init" and 1 <= len(args[1][1]) <= 4:
            shape = tuple(self.int_expr(env, x, line) for x in args[1][1])
        return [("create", t["tensor"], t["suffix"], t["bid"], t["xid"], flags, hslot, hlayer, line, self.path, shape)]

    def if_stmt(self, env, line, s, ctx):
        _, cond, then, els = s
        pre = []
        scope = Env(env)
        if cond[0] == "declcond":
            pre = self.decl(scope, line, cond[1], cond[2], cond[3], ctx)
            c = self.int_expr(scope, cond[4] if len(cond) > 4 else ("name", cond[2]), line)
        else:
            if self.mode == "hparams" and hpx.contains_get(cond):
                cond = self.lift(scope, line, cond, pre)
            c = self.int_expr(scope, cond, line)
        t = self.stmt(Env(scope), then[0], then[1], ctx)
        e = self.stmt(Env(scope), els[0], els[1], ctx) if els else []
        return pre + [("if", c, t, e, line)]

    def for_stmt(self, env, line, s, ctx):
        p = self.p
        _, init, cond, step, body = s
        scope = Env(env)
        pre = self.stmt(scope, init[0], init[1], ctx) if init else []
        c = self.int_expr(scope, cond, line) if cond else p.const(1)
        b = self.stmt(Env(scope), body[0], body[1], dict(ctx, in_switch=False))
        st = self.expr_stmt(scope, line, step, ctx) if step else []
        return pre + [("for", c, b, st, line)]

    def switch_stmt(self, env, line, s, ctx):
        p = self.p
        _, e, cases = s
        v = self.int_expr(env, e, line)
        chain = []
        default = []
        for values, stmts in cases:
            if stmts and stmts[-1][1][0] == "break":
                stmts = stmts[:-1]
            elif stmts and stmts[-1][1][0] == "block" and stmts[-1][1][1] and stmts[-1][1][1][-1][1][0] == "break":
                blk = stmts[-1][1]
                stmts = stmts[:-1] + [(stmts[-1][0], ("block", blk[1][:-1]))]
            elif stmts and not (stmts[-1][1][0] in ("return", "throw")) and (values, stmts) != cases[-1]:
                raise CompileError(f"{self.path}:{line}: switch case falls through")
            body = self.block(Env(env), stmts, dict(ctx, in_switch=True))
            if values is None:
                default = body
                continue
            c = None
            for val in values:
                t = p.expr("EQ", v, self.int_expr(env, val, line))
                c = t if c is None else p.expr("LOR", c, t)
            chain.append((c, body))
        out = default
        for c, body in reversed(chain):
            out = [("if", c, body, out, line)]
        return out

    # -------------------------------------------------------- inlining

    def lambda_of(self, env, call):
        if call[0] == "call" and call[1][0] == "name":
            b = env.get(call[1][1])
            if b and b[0] == "lambda":
                return b
        return None

    def has_lambda_call(self, env, e):
        return e[0] == "call" and self.lambda_of(env, e) is not None

    def bind_params(self, env, callee_env, params, args, line, body):
        out = []
        if len(args) < len(params) and call_defaults(params, args):
            args = list(args) + call_defaults(params, args)
        if len(params) != len(args):
            raise CompileError(f"{self.path}:{line}: {len(args)} arguments for {len(params)} parameters")
        for (ty, pname), arg in zip(params, args):
            callee_env.set_type(pname, hpx.ctype_of_text(ty, self.hp.enum_types), ty)
            if "llama_model_loader" in ty:
                continue
            if "llm_kv" in ty.split():
                callee_env.set(pname, ("kv", self.kv_key(env, arg, line)))
                continue
            if "llama_layer" in ty:
                alias = self.layer_alias(env, arg, line)
                if not alias:
                    raise CompileError(f"{self.path}:{line}: layer argument {render(arg)}")
                callee_env.set(pname, alias)
            elif "llm_tensor" in ty:
                b = self.name_value(env, arg[1], line) if arg[0] == "name" else None
                if not b or b[0] != "tensor":
                    raise CompileError(f"{self.path}:{line}: tensor argument {render(arg)}")
                callee_env.set(pname, b)
            elif not assigns(body, pname):
                # never written in the callee: read the argument where it is used
                callee_env.set(pname, ("lazy", arg, env))
            else:
                slot = self.fn.local()
                callee_env.set(pname, ("local", slot))
                out.append(("set", slot, self.int_expr(env, arg, line), line))
        return out

    def inline_lambda(self, env, line, call, target, ctx):
        _, params, body, def_env = self.lambda_of(env, call)
        self.depth += 1
        if self.depth > 8:
            raise CompileError(f"{self.path}:{line}: lambdas nested too deep")
        callee = Env(def_env)
        pre = self.bind_params(env, callee, params, call[2], line, body)
        inner = self.block(callee, body[1], {"target": target})
        self.depth -= 1
        return pre + [("scope", inner, line)]

    def inline_helper(self, env, line, call, ctx):
        params, body, path = self.helpers[call[1][1]]
        callee = Env(None)
        pre = self.bind_params(env, callee, params, call[2], line, body)
        saved = self.path
        self.path = path
        inner = self.block(callee, body[1], {"target": None})
        self.path = saved
        return pre + [("scope", inner, line, path)]


def call_defaults(params, args):
    """The default arguments of the parameters a call leaves out (only a
    trailing bool, as load_swa_pattern's dense_first = false, has one here)."""
    missing = params[len(args):]
    if all(t.split()[-1] == "bool" for t, _ in missing):
        return [("name", "false")] * len(missing)
    return []


def is_create(e):
    return e[0] == "call" and e[1] == ("name", "create_tensor")


def contains_create(node):
    return hpx.contains(node, is_create)


def render(e):
    """Short C++-ish text of an expression, for messages."""
    k = e[0]
    if k == "name":
        return e[1]
    if k == "num":
        return str(e[1])
    if k == "str":
        return '"' + e[1] + '"'
    if k == "member":
        return render(e[1]) + ("->" if e[3] else ".") + e[2]
    if k == "call":
        return render(e[1]) + "(" + ", ".join(render(a) for a in e[2]) + ")"
    if k == "index":
        return render(e[1]) + "[" + render(e[2]) + "]"
    if k == "bin":
        return render(e[2]) + " " + e[1] + " " + render(e[3])
    if k == "un":
        return e[1] + render(e[2])
    if k == "cast":
        return render(e[2])
    return k


def refers_to_state(prog, node):
    """Does an expression read a local or a handle (values that change as
    the program runs)?"""
    kind, a, b, c, _ = prog.exprs[node]
    if kind in ("LOCAL", "HANDLE", "HTYPE"):
        return True
    if kind in ("WEIGHT",):
        return any(x >= 0 and refers_to_state(prog, x) for x in (b, c))
    if kind in ("HPF", "HPM", "VOCAB"):  # the store changes while the hparams run
        return prog.mode == "hparams" or (kind != "VOCAB" and b >= 0 and refers_to_state(prog, b))
    if kind in ("NOT", "NEG", "BNOT", "CAST"):
        return refers_to_state(prog, a)
    if kind in BINOPS.values() or kind == "COND":
        return any(x >= 0 and refers_to_state(prog, x) for x in (a, b, c))
    return False


def has_unknown(prog, node):
    kind, a, b, c, _ = prog.exprs[node]
    if kind == "UNKNOWN":
        return True
    if kind in ("CONST", "LOCAL", "NLAYER", "NLAYER_ALL", "NLAYER_NEXTN", "LOAD_MTP", "ARCH", "VOCAB"):
        return False
    if kind in ("HPF", "HPM"):
        return b >= 0 and has_unknown(prog, b)
    if kind == "WEIGHT":
        return any(x >= 0 and has_unknown(prog, x) for x in (b, c))
    if kind in ("HANDLE", "HTYPE"):
        return b >= 0 and has_unknown(prog, b)
    return any(x >= 0 and has_unknown(prog, x) for x in (a, b, c))


def hparams_writes(body):
    """(top_level, (field, kv_enum|None, required)) for every write of a
    hparams.FIELD in a function body: assignments, ++/--, and the loader's
    get_* calls that fill their second argument."""
    out = []

    def field_of(e):
        if e[0] == "member" and e[1] == ("name", "hparams"):
            return e[2]
        if e[0] == "index":
            return field_of(e[1])
        return None

    def visit(node, top):
        if isinstance(node, list):
            for x in node:
                visit(x, top)
            return
        if not isinstance(node, tuple) or not node:
            return
        k = node[0]
        if k == "assign" or (k in ("un", "post") and node[1] in ("++", "--")):
            f = field_of(node[2])
            if f:
                out.append((False, (f, None, False)))
        if k == "call" and node[1][0] == "member" and node[1][1] in (("name", "ml"),) and \
                node[1][2].startswith("get_") and len(node[2]) >= 2:
            f = field_of(node[2][1])
            if f:
                kv = node[2][0][1] if node[2][0][0] == "name" else None
                plain = node[1][2] == "get_key" and field_of(node[2][1]) == node[2][1][2] and \
                    node[2][1][0] == "member"
                required = len(node[2]) == 2 or node[2][2] == ("name", "true")
                optional_ok = len(node[2]) == 3 and node[2][2] in (("name", "false"), ("name", "true"))
                ok = plain and (len(node[2]) == 2 or optional_ok)
                out.append((top and ok, (f, kv if ok else None, required)))
        if k == "call" and node[1][0] == "member" and node[1][1] == ("name", "hparams"):
            out.append((False, (node[1][2], None, False)))  # a setter: not a plain key
        for x in node[1:]:
            visit(x, False)

    for _, st in body[1]:
        if st[0] == "expr" and st[1][0] == "call":
            visit(st[1], True)
        else:
            visit(st, False)
    return out


def assigns(node, name):
    """Does the syntax tree write the plain name (=, op=, ++, --)?"""
    key = (id(node), name)
    if key not in _ASSIGNS:
        _ASSIGNS[key] = _assigns(node, name)
    return _ASSIGNS[key]


_ASSIGNS = {}


def _assigns(node, name):
    def writes(n):
        return (n[0] == "assign" and n[2] == ("name", name) or
                n[0] in ("un", "post") and n[1] in ("++", "--") and n[2] == ("name", name))
    return hpx.contains(node, writes)


def collect_handle_members(bodies):
    """Plain names assigned from create_tensor anywhere: the model's tensor
    members (output, tok_embd, ...)."""
    names = set()

    def walk(node):
        if isinstance(node, tuple):
            if node and node[0] == "assign" and node[2][0] == "name" and contains_create(node[3]):
                names.add(node[2][1])
            for x in node:
                walk(x)
        elif isinstance(node, list):
            for x in node:
                walk(x)

    for b in bodies:
        walk(b)
    return names


# ------------------------------------------------------------------ the whole table


def generic_pass(src):
    """The generic '.scale' pass of load_tensors, between load_arch_tensors(ml)
    and ml.done_getting_tensors(), as a block."""
    text = src.model_cpp
    a = text.index("load_arch_tensors(ml);")
    a = text.index("\n", a) + 1
    b = text.index("ml.done_getting_tensors();", a)
    region = text[a:b]
    # The region ends with the '}' closing the "create tensors" block.
    region = region[:region.rstrip().rfind("}")]
    first_line = text.count("\n", 0, a) + 1
    return cx.parse_body("{" + region + "}", first_line, "src/llama-model.cpp"), first_line


def build(root):
    src = Sources(root)
    prog = Program(src)
    helpers = {}
    for name in ("create_tensor_qkv", "create_tensor_gate_up_exps"):
        q = "llama_model_base::" + name
        body_text, line = cx.find_function(src.model_cpp, q)
        helpers[name] = (src.params_of(src.model_cpp, q), cx.parse_body(body_text, line, "src/llama-model.cpp"),
                         "src/llama-model.cpp")
    loaders = {}
    for arch in sorted(src.arch_class, key=lambda a: src.arch_enum[a]):
        r = src.loader_of(src.arch_class[arch])
        if r is None:
            raise SystemExit(f"gen_arch_table: no load_arch_tensors for {arch} ({src.arch_class[arch]})")
        path, text, line, cls = r
        if cls not in loaders:
            loaders[cls] = (path, line, cx.parse_body(text, line, path))
    gp_body, gp_line = generic_pass(src)
    members = collect_handle_members([v[2] for v in loaders.values()] + [gp_body])

    users = {}  # defining class -> the classes of the archs whose loader it is
    for arch in src.arch_class:
        users.setdefault(src.loader_of(src.arch_class[arch])[3], set()).add(src.arch_class[arch])
    functions = []
    fn_of_class = {}
    for cls, (path, line, body) in sorted(loaders.items(), key=lambda kv: (kv[1][0], kv[1][1])):
        fn = Function(prog, cls + "::load_arch_tensors", path, line)
        comp = Compiler(prog, fn, members, helpers)
        fn.body = comp.block(Env(), body[1], {"target": None})
        fn_of_class[cls] = len(functions)
        functions.append(fn)
    gfn = Function(prog, "llama_model_base::load_tensors (generic pass)", "src/llama-model.cpp", gp_line)
    genv = Env()
    genv.set("n_layer_all", ("int", prog.expr("NLAYER_ALL")))
    comp = Compiler(prog, gfn, members, helpers)
    gfn.body = comp.block(genv, gp_body[1], {"target": None})
    prog.generic_pass = len(functions)
    functions.append(gfn)

    hp_of_class = build_hparams(src, prog, functions, members)
    graph_of_class = build_graph_checks(src, prog, functions, members)
    archs = []
    for arch in sorted(src.arch_class, key=lambda a: src.arch_enum[a]):
        cls = src.arch_class[arch]
        path, _, _, defining = src.loader_of(cls)
        archs.append((src.arch_names[arch], arch, src.arch_enum[arch], fn_of_class[defining],
                      hp_of_class.get(src.hparams_class(cls), -1), graph_of_class.get(cls, -1)))
    return src, prog, functions, archs


def arch_memory_flags(src):
    """{LLM_ARCH_X: GM_ARCH_* flags}: llm_arch_is_recurrent / llm_arch_is_hybrid
    (src/llama-arch.cpp), and which archs llama_model::create_memory makes
    a memory of its own for (a case before its default:) or none at all."""
    arch_cpp = read(src.root, "src/llama-arch.cpp")
    flags = {}

    def cases(body):
        return re.findall(r"case\s+(LLM_ARCH_\w+)\s*:", body)

    for fn, flag in (("llm_arch_is_recurrent", "GM_ARCH_RECURRENT"), ("llm_arch_is_hybrid", "GM_ARCH_HYBRID")):
        body, _ = cx.find_function(arch_cpp, fn)
        for a in cases(body):
            flags.setdefault(a, []).append(flag)
    body, _ = cx.find_function(src.model_cpp, "llama_model::create_memory")
    head = body[:body.index("default:")]
    pending = []
    for m in re.finditer(r"case\s+(LLM_ARCH_\w+)\s*:|\{", head):
        if m.group(1):
            pending.append(m.group(1))
            continue
        if not pending:
            continue
        block = cx.balanced(head, m.start())
        own = "GM_ARCH_NO_MEMORY" if re.fullmatch(r"\{\s*res\s*=\s*nullptr;\s*\}", block) else "GM_ARCH_OWN_MEMORY"
        for a in pending:
            flags.setdefault(a, []).append(own)
        pending = []
    return {a: " | ".join(f) for a, f in flags.items()}


def graph_members(src):
    """llm_graph_context's members and the expressions its constructor
    initializes them with (src/llama-graph.cpp): n_rot is hparams.n_rot()."""
    text = read(src.root, "src/llama-graph.cpp")
    m = re.search(r"llm_graph_context::llm_graph_context\(const llm_graph_params & params\)\s*:(.*?)\{", text, re.S)
    first = text.count("\n", 0, m.start(1)) + 1
    out = {}
    for mm in re.finditer(r"(\w+)\s*\(([^()]*(?:\([^()]*\))?[^()]*)\)\s*,?", m.group(1)):
        line = first + m.group(1).count("\n", 0, mm.start())
        try:
            toks = cx.tokenize(mm.group(2), line)
            out[mm.group(1)] = cx.Parser(toks, "src/llama-graph.cpp").parse_expr()
        except SyntaxError:
            continue
    return out


def graph_classes(src, cls):
    """(file, constructor body, first line) of every graph class cls builds
    for a context of its own (build_arch_graph's make_unique<...>, the MTP
    draft's graph_mtp left out)."""
    c = cls
    while c and c.startswith("llama_model_") and c != "llama_model_base":
        for path, text in src.model_files.items():
            r = cx.find_function(text, c + "::build_arch_graph") if c + "::build_arch_graph" in text else None
            if not r:
                continue
            out = []
            for ty in sorted(set(re.findall(r"make_unique<(graph\w*)(?:<\w+>)?>", r[0]))):
                if "mtp" in ty:
                    continue
                for tpath, ttext in src.model_files.items():
                    for name in (f"{c}::{ty}::{ty}", f"{c}::{ty}<embed>::{ty}"):
                        g = constructor_body(ttext, name) if name in ttext else None
                        if g:
                            out.append((tpath, g[0], g[1]))
            return out
        c = src.bases.get(c)
    return []


def constructor_body(text, qualified):
    """(body text, first line) of a constructor's definition, past its
    member initializer list, or None."""
    for m in re.finditer(r"\b" + re.escape(qualified) + r"\s*\(", text):
        j, depth = m.end() - 1, 0
        while True:  # the parameter list
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        rest = text[j:]
        if not re.match(r"\s*[:{]", rest):
            continue  # a declaration or a call
        k, depth = j, 0
        while text[k] != "{" or depth:  # the initializer list's parentheses
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        return cx.balanced(text, k), text.count("\n", 0, k) + 1
    return None


def build_graph_checks(src, prog, functions, members):
    """The GGML_ASSERTs of each architecture's graph constructor that the
    hyperparameters decide (n_embd_head == n_rot, ...), compiled into a
    function per class: llama.cpp aborts on them when it builds the graph
    of any context.  {class: function index}."""
    gm = graph_members(src)
    out = {}
    for cls in sorted(set(src.arch_class.values())):
        graphs = graph_classes(src, cls)
        if not graphs:
            continue
        fn = Function(prog, cls + " graph (llm_graph_context)", graphs[0][0], graphs[0][2])
        fn.kind = "GRAPH"
        body = []
        try:
            for path, text, line in graphs:
                env = Env()
                for name, init in gm.items():
                    env.set(name, ("lazy", init, Env()))
                fn.path = path
                comp = Compiler(prog, fn, members, {}, mode="graph")
                body += comp.block(env, cx.parse_body(text, line, path)[1], {"target": None})
        except (CompileError, SyntaxError) as e:
            prog.graph_failed.append((cls, str(e)))
            continue
        body = prune(body)
        if not any(s[0] in ("assert", "fail") for s in flat_kinds(body)):
            continue
        fn.body = body
        out[cls] = len(functions)
        functions.append(fn)
    return out


def prune(stmts):
    """The statements without the compound ones that check nothing."""
    out = []
    for s in stmts:
        if s[0] in ("if", "for"):
            a, b = prune(s[2]), prune(s[3]) if s[0] == "if" else s[3]
            if any(x[0] in ("assert", "fail") for x in flat_kinds(a + list(b))):
                out.append((s[0], s[1], a, b, s[4]))
        elif s[0] == "scope":
            inner = prune(s[1])
            if any(x[0] in ("assert", "fail") for x in flat_kinds(inner)):
                out.append(("scope", inner, s[2]))
        else:
            out.append(s)
    return out


def flat_kinds(stmts):
    for s in stmts:
        yield s
        if s[0] in ("if", "for"):
            yield from flat_kinds(s[2])
            yield from flat_kinds(s[3])
        elif s[0] == "scope":
            yield from flat_kinds(s[1])


def static_helpers(src, path):
    """name -> (params, body, path) of the free functions a model file
    defines (static helpers such as qwen4exp_require_nonzero)."""
    text = src.file_text(path)
    out = {}
    for m in re.finditer(r"^static\s+[\w:<>]+\s+(\w+)\s*\(", text, re.M):
        r = cx.find_function(text, m.group(1))
        if r:
            out[m.group(1)] = (src.params_of(text, m.group(1)), cx.parse_body(r[0], r[1], path), path)
    return out


def build_hparams(src, prog, functions, members):
    """Compiles llama_model_base::load_hparams and every class's
    load_arch_hparams into functions; {class: function index}.  A class
    whose code does not compile gets none (its fields stay unknown)."""
    base_helpers = {}
    q = "llama_model_base::load_swa_pattern"
    body_text, line = cx.find_function(src.model_cpp, q)
    decl = src.params_of(read(src.root, "src/llama-model.h"), "load_swa_pattern", declaration=True)
    base_helpers["load_swa_pattern"] = ([(t, n) for t, n, _ in decl],
                                        cx.parse_body(body_text, line, "src/llama-model.cpp"), "src/llama-model.cpp")
    body_text, line = cx.find_function(src.model_cpp, "llama_model_base::load_hparams")
    fn = Function(prog, "llama_model_base::load_hparams", "src/llama-model.cpp", line)
    fn.kind = "HPARAMS"
    comp = Compiler(prog, fn, members, base_helpers, mode="hparams")
    fn.body = comp.block(Env(), cx.parse_body(body_text, line, "src/llama-model.cpp")[1], {"target": None})
    prog.base_hparams = len(functions)
    functions.append(fn)
    out = {}
    prog.hparams_failed = []
    for cls in sorted(set(src.hparams_class(c) for c in src.arch_class.values()) - {None}):
        path, text, line = src.hparams_def(cls)
        fn = Function(prog, cls + "::load_arch_hparams", path, line)
        fn.kind = "HPARAMS"
        helpers = dict(base_helpers, **static_helpers(src, path))
        try:
            comp = Compiler(prog, fn, members, helpers, mode="hparams")
            fn.body = comp.block(Env(), cx.parse_body(text, line, path)[1], {"target": None})
        except (CompileError, SyntaxError) as e:
            prog.hparams_failed.append((cls, str(e)))
            continue
        out[cls] = len(functions)
        functions.append(fn)
    return out


# ------------------------------------------------------------------ emitting C


def c_escape(text):
    """text as the inside of a C string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def row(kind, a=-1, b=-1, c=-1, d=-1, e=-1, f=-1, g=-1, line=0, path=None, tensor=None, suffix=None, h=-1):
    """One flattened statement: kind, operands a..h, its source line and file."""
    return (kind, a, b, c, d, e, f, g, line, path, tensor, suffix, h)


def flatten(stmts, out, prog, path):
    """Pre-order flattening; every compound statement records its subtree
    sizes.  Conditions, flags and layer arguments the file cannot decide are
    listed in prog.notes."""
    for s in stmts:
        k = s[0]
        if k in ("if", "for") and has_unknown(prog, s[1]):
            prog.notes.append((path, s[4], f"{k} condition unknown: resolved by the tensors present"))
        if k == "create":
            _, tensor, suffix, bid, xid, flags, hslot, hlayer, line, path, shape = s
            for what, e in (("flags", flags), ("layer", bid), ("xid", xid)):
                if e >= 0 and has_unknown(prog, e):
                    prog.notes.append((path, line, f"create_tensor {what} unknown"))
            out.append(row("CREATE", prog.src.tensor_enum_index[tensor], -1 if suffix is None else prog.string(suffix),
                           bid, xid, flags, hslot, hlayer, line, path, tensor, suffix,
                           -1 if shape is None else prog.shape(shape)))
        elif k == "set":
            out.append(row("SET", s[1], s[2], line=s[3], path=path))
        elif k == "hset":
            out.append(row("HSET", s[1], s[2], s[3], s[4], line=s[5], path=path))
        elif k in ("return", "break", "continue"):
            out.append(row(k.upper(), line=s[1]))
        elif k == "callarch":
            out.append(row("CALLARCH", line=s[1]))
        elif k == "fail":
            args = list(s[4]) + [-1] * (3 - len(s[4])) if len(s) > 4 else [-1, -1, -1]
            out.append(row("FAIL", s[1], args[0], args[1], args[2], line=s[2], path=s[3]))
        elif k == "getkey":
            _, key, mode, field, local, n_expr, result, required, line, path = s
            out.append(row("GETKEY", key, mode, field, local, n_expr, result, required, line=line, path=path))
        elif k == "hpset":
            out.append(row("HPSET", s[1], s[2], s[3], line=s[4], path=path))
        elif k == "hpcopy":
            out.append(row("HPCOPY", s[1], s[2], line=s[3], path=path))
        elif k == "hpfill":
            out.append(row("HPFILL", s[1], s[2], line=s[3], path=path))
        elif k == "hpcall":
            out.append(row("HPCALL", s[1], s[2], s[3], line=s[4], path=path))
        elif k == "assert":
            out.append(row("ASSERT", s[1], s[2], line=s[3], path=s[4]))
        elif k == "scope":
            at = len(out)
            out.append(None)
            flatten(s[1], out, prog, s[3] if len(s) > 3 else path)
            out[at] = row("SCOPE", len(out) - at - 1, line=s[2], path=path)
        elif k in ("if", "for"):  # IF: then, else; FOR: body, step
            at = len(out)
            out.append(None)
            flatten(s[2], out, prog, path)
            n_first = len(out) - at - 1
            flatten(s[3], out, prog, path)
            n_second = len(out) - at - 1 - n_first
            out[at] = row(k.upper(), s[1], n_first, n_second, line=s[4], path=path)
        else:
            raise SystemExit(f"gen_arch_table: internal: statement {k}")


def emit(root, out_path):
    src, prog, functions, archs = build(root)
    tensors = sorted(src.tensor_enum, key=lambda t: src.tensor_enum[t])
    src.tensor_enum_index = {t: i for i, t in enumerate(tensors)}
    flat, fn_rows = [], []
    for fn in functions:
        first = len(flat)
        flatten(fn.body, flat, prog, fn.path)
        fn_rows.append((first, len(flat) - first, fn.n_locals, fn.name, fn.path, fn.line, fn.kind))
    files = sorted({fn.path for fn in functions} | {r[9] for r in flat if r[9]})
    file_index = {f: i for i, f in enumerate(files)}
    ops = sorted({info[1] for info in src.tensor_infos.values()})
    commit = source_commit(root)

    w = []
    w.append("/*")
    w.append(" * arch_table.c - GENERATED by scripts/gen_arch_table.py from llama.cpp's source")
    w.append(f" * ({commit}); do not edit.  tests/arch regenerates it and fails on any")
    w.append(" * difference.")
    w.append(" *")
    w.append(" * Every architecture llama_model_mapping knows, its load_arch_tensors")
    w.append(" * compiled into statements over an expression pool (src/arch.h explains the")
    w.append(" * encoding; src/arch.c runs them), and the tensors of LLM_TENSOR_NAMES with")
    w.append(" * their LLM_TENSOR_INFOS class and op.")
    w.append(" */")
    w.append('#include "arch.h"')
    w.append("")
    w.append(f"const uint32_t gm_arch_n_tensors = {len(tensors)};")
    w.append(f"const uint32_t gm_arch_tensor_token_embd = {src.tensor_enum_index['LLM_TENSOR_TOKEN_EMBD']};")
    w.append(f"const uint32_t gm_arch_tensor_output = {src.tensor_enum_index['LLM_TENSOR_OUTPUT']};")
    w.append("const gm_arch_tensor gm_arch_tensors[] = {")
    for t in tensors:
        name = src.tensor_names.get(t)
        info = src.tensor_infos.get(t)
        cls = f"GM_LAYER_{info[0]}" if info else "GM_LAYER_NONE"
        op = f"GM_OP_{info[1]}" if info else "GM_OP_NONE"
        where = f"llama-arch.cpp:{src.tensor_name_line[t]}" if name else "no name"
        if info:
            where += f",{info[2]}"
        cname = '"' + name + '"' if name else "NULL"
        w.append(f"    {{{cname}, {cls}, {op}, {1 if info else 0}}}, /* {t} ({where}) */")
    w.append("};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_strings = {len(prog.strings)};")
    w.append("const char *const gm_arch_strings[] = {")
    for i, s in enumerate(prog.strings):
        w.append(f'    "{c_escape(s)}", /* {i} */')
    w.append("};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_handles = {len(prog.handles)};")
    w.append("const char *const gm_arch_handles[] = {")
    for i, s in enumerate(prog.handles):
        w.append(f'    "{s}", /* {i} */')
    w.append("};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_exprs = {len(prog.exprs)};")
    w.append("const gm_arch_expr gm_arch_exprs[] = {")
    for i, (kind, a, b, c, v) in enumerate(prog.exprs):
        w.append(f"    {{GM_AX_{kind}, {a}, {b}, {c}, {v}}}, /* {i} */")
    w.append("};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_files = {len(files)};")
    w.append("const char *const gm_arch_files[] = {")
    for f in files:
        w.append(f'    "{f}",')
    w.append("};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_stmts = {len(flat)};")
    w.append("const gm_arch_stmt gm_arch_stmts[] = {")
    fn_starts = {r[0]: r for r in fn_rows}
    for i, r in enumerate(flat):
        if i in fn_starts:
            w.append(f"    /* {fn_starts[i][3]} ({fn_starts[i][4]}:{fn_starts[i][5]}) */")
        kind = r[0]
        fidx = file_index.get(r[9], 0) if r[9] else 0
        comment = ""
        if kind == "CREATE":
            name = src.tensor_names[r[10]] + ("." + r[11] if r[11] else "")
            comment = f" {name} ({r[9]}:{r[8]})"
        b = r[2]
        if kind == "GETKEY":
            b = f"GM_GK_{hpx.GK_MODES[r[2] & 255]} | GM_CT_{hpx.CTYPES[r[2] >> 8]} << 8"
            comment = f" {prog.strings[r[1]]}"
        elif kind in ("HPSET", "HPFILL", "HPCOPY"):
            comment = f" hparams.{prog.hp.order[r[1]]}"
        elif kind == "ASSERT":
            comment = f" GGML_ASSERT({prog.strings[r[2]]})".replace("*/", "* /")
        w.append(f"    {{GM_AS_{kind}, {r[1]}, {b}, {r[3]}, {r[4]}, {r[5]}, {r[6]}, {r[7]}, {r[12]}, {r[8]}, {fidx}}},"
                 f" /* {i}{comment} */")
    w.append("};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_funcs = {len(fn_rows)};")
    w.append("const gm_arch_func gm_arch_funcs[] = {")
    for i, (first, n, n_locals, name, path, line, kind) in enumerate(fn_rows):
        w.append(f'    {{{first}, {n}, {n_locals}, GM_FN_{kind}, "{name}", "{path}:{line}"}}, /* {i} */')
    w.append("};")
    w.append(f"const uint32_t gm_arch_generic_pass = {prog.generic_pass};")
    w.append(f"const uint32_t gm_arch_base_hparams = {prog.base_hparams};")
    w.append("")
    w.append(f"const uint32_t gm_arch_n_defs = {len(archs)};")
    w.append("const gm_arch_def gm_arch_defs[] = { /* llama_model_mapping, src/llama-model.cpp */")
    mem = arch_memory_flags(src)
    for name, enum, value, fn, hfn, gfn in sorted(archs, key=lambda a: a[0]):
        w.append(f'    {{"{name}", {value}, {fn}, {hfn}, {gfn}, {mem.get(enum, 0)}}}, /* {enum} */')
    w.append("};")
    w.append("")
    w.append("/* The shapes create_tensor asks for (check_tensor_dims): dimension count, expressions. */")
    w.append(f"const uint32_t gm_arch_n_shapes = {len(prog.shapes)};")
    w.append("const gm_arch_shape gm_arch_shapes[] = {")
    for i, dims in enumerate(prog.shapes):
        d = list(dims) + [-1] * (4 - len(dims))
        w.append(f"    {{{len(dims)}, {{{d[0]}, {d[1]}, {d[2]}, {d[3]}}}}}, /* {i} */")
    w.append("};")
    w.append("")
    w.append("/* struct llama_hparams (src/llama-hparams.h): every field, its type, its")
    w.append(" * element count (1, or an array's) and its initializer (the struct is")
    w.append(" * value-initialized: 0 where none is written; init_known 0 for floats). */")
    w.append(f"const uint32_t gm_hp_n_fields = {len(prog.hp.order)};")
    w.append("const gm_hp_field gm_hp_fields[] = {")
    for i, name in enumerate(prog.hp.order):
        ty, count, init = prog.hp.fields[name]
        w.append(f'    {{"{name}", GM_CT_{ty}, {count}, {0 if init is None else init}, {0 if init is None else 1}}},'
                 f" /* {i} */")
    w.append("};")
    w.append("")
    w.append("/* LLAMA_ROPE_SCALING_TYPES (src/llama-model.cpp): what llama_rope_scaling_type_from_string")
    w.append(" * maps a name to (STRKEY; any other name is LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED). */")
    w.append(f"const uint32_t gm_arch_n_rope_scaling = {len(src.rope_scaling_types)};")
    w.append("const gm_arch_name_value gm_arch_rope_scaling[] = {")
    for enum, name in src.rope_scaling_types:
        w.append(f'    {{"{name}", {prog.hp.enums[enum]}}}, /* {enum} */')
    w.append("};")
    w.append(f"const int32_t gm_arch_rope_scaling_unspecified = {prog.hp.enums['LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED']};")
    w.append("")
    w.append("/* The methods of llama_hparams the table calls (src/arch.c implements them from")
    w.append(" * src/llama-hparams.cpp; tests/arch/regen.sh checks that every one is). */")
    methods = sorted(prog.hp.methods)
    w.append(f"const uint32_t gm_hp_n_methods = {len(methods)};")
    w.append("const char *const gm_hp_methods[] = {")
    for name in methods:
        w.append(f'    "{name}",')
    w.append("};")
    w.append("")
    w.append("/* The flags of llama_model_loader::create_tensor (src/llama-model-loader.h). */")
    for n, v in sorted(prog.flags.items(), key=lambda kv: kv[1]):
        w.append(f"const uint32_t gm_arch_{n.lower()} = {v};")
    w.append("")
    w.append("/* The keys src/arch.c reads (LLM_KV_NAMES, src/llama-arch.cpp). */")
    for kv in ("LLM_KV_BLOCK_COUNT", "LLM_KV_NEXTN_PREDICT_LAYERS", "LLM_KV_NUM_LOOPS",
               "LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN", "LLM_KV_GENERAL_ARCHITECTURE"):
        w.append(f'const char gm_arch_{kv[7:].lower()}[] = "{src.kv_names[kv]}";')
    w.append("")
    text = "\n".join(w) + "\n"
    unknown_ops = [o for o in ops if o not in KNOWN_OPS]
    if unknown_ops:
        raise SystemExit(f"gen_arch_table: ops without a GM_OP_ value in src/arch.h: {unknown_ops}")
    if out_path == "-":
        sys.stdout.write(text)
    else:
        tmp = out_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out_path)
    return prog


KNOWN_OPS = {"NONE", "GET_ROWS", "MUL_MAT", "MUL_MAT_ID", "MUL", "ADD", "ADD_ID", "DIV", "ROPE", "SSM_CONV",
             "SSM_SCAN", "RWKV_WKV6", "IM2COL", "SCALE"}


def source_commit(root):
    """The commit of the tree, from a VERSION-like stamp the caller may leave
    (GGUFMAP_LLAMA_COMMIT) - the generator itself never runs git."""
    return os.environ.get("GGUFMAP_LLAMA_COMMIT", "llama.cpp v0.5.0, commit de3ff815")


INPUTS = ["src/llama-arch.h", "src/llama-arch.cpp", "ggml/include/ggml.h", "src/llama-model.cpp", "src/llama-model.h",
          "src/llama-graph.cpp",
          "src/llama-model-loader.h", "src/llama-hparams.h", "include/llama.h", "src/models"]


def main(argv):
    if argv[1:] == ["--inputs"]:
        print("\n".join(INPUTS))
        return 0
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--notes"):
        sys.stderr.write("usage: gen_arch_table.py LLAMA_SRC_DIR OUT.c|- [--notes] | --inputs\n")
        return 1
    try:
        prog = emit(argv[1], argv[2])
    except (CompileError, SyntaxError) as e:
        sys.stderr.write(f"gen_arch_table: {e}\n")
        return 1
    if len(argv) == 4:
        for path, line, text in sorted(set(prog.notes)):
            sys.stderr.write(f"{path}:{line}: {text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
