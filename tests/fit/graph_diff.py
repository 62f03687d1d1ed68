#!/usr/bin/env python3
"""graph_diff.py - compare fit's shape-only graph with llama.cpp's, node by node.

A developer's aid, run by no test.  FIT is the stderr of a ggufmap built with
-DGGUFMAP_GRAPH_DUMP (src/fit_graph_dump.c), ORACLE the stdout of
`ggufmap-oracle --graph ...` for the same model and context options.

fit dumps two graphs per context (the prompt reserve, then the one-token
one); llama.cpp splits its fused-op probes first, then prompt, one-token and
prompt again, so the oracle's graphs are taken from the end.  Ops are
compared as fit names them (ggml's unary and GLU variants folded), buffers
as kinds (CPU, REPACK, HOST, GPU), backends as CPU or GPU, names ignored.

usage: graph_diff.py FIT ORACLE [pp|tg] [MAX_DIFFS]
"""
import re
import sys

UNARY = set("ABS SGN NEG STEP TANH ELU RELU SIGMOID GELU GELU_QUICK SILU HARDSWISH HARDSIGMOID EXP EXPM1 "
            "SOFTPLUS GELU_ERF XIELU FLOOR CEIL ROUND TRUNC".split())
GLU = set("REGLU GEGLU SWIGLU SWIGLU_OAI GEGLU_ERF GEGLU_QUICK".split())


def graphs(path):
    out, cur = [], None
    for line in open(path, errors="replace"):
        if line.startswith("GRAPH "):
            cur = []
            out.append(cur)
        elif cur is not None and (line.startswith("GLEAF ") or line.startswith("GNODE ")):
            cur.append(line.rstrip("\n"))
    return out


def norm_buf(b):
    if b in ("CPU_Mapped", "CPU"):
        return "CPU"
    if b == "CPU_REPACK":
        return "REPACK"
    if b == "CUDA_Host":
        return "HOST"
    m = re.match(r"(?:MTL|CUDA|GPU)(\d*)", b)
    if m:
        return "GPU" + (m.group(1) if m.group(1) not in ("", "0") else "")
    return b


def norm(line, is_oracle):
    f = dict(kv.split("=", 1) for kv in line.split()[2:] if "=" in kv)
    op = f["op"]
    if op in UNARY:
        op = "UNARY"
    elif op in GLU:
        op = "GLU"
    kw = line.split()[0]
    buf = norm_buf(f["buf"]) if kw == "GLEAF" else "-"
    be = f["be"]
    be = norm_buf(be) if be != "-" else be
    flags = int(f["flags"]) & 3
    return "%s %s type=%s ne=%s nb=%s view=%s src=%s flags=%d buf=%s be=%s" % (
        kw, op, f["type"], f["ne"], f["nb"], f["view"], f["src"], flags, buf, be), f.get("name", "-")


def main():
    fit_path, oracle_path = sys.argv[1], sys.argv[2]
    which = sys.argv[3] if len(sys.argv) > 3 else "pp"
    max_diffs = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    fg, og = graphs(fit_path), graphs(oracle_path)
    if len(fg) < 2 or len(og) < 3:
        sys.exit("need 2 fit graphs and 3 oracle graphs, got %d and %d" % (len(fg), len(og)))
    f = fg[-2] if which == "pp" else fg[-1]
    o = og[-3] if which == "pp" else og[-2]
    fl = [norm(x, False) for x in f]
    ol = [norm(x, True) for x in o]
    n_diff = 0
    print("fit: %d lines, llama.cpp: %d lines" % (len(fl), len(ol)))
    for i in range(max(len(fl), len(ol))):
        a = fl[i][0] if i < len(fl) else "<none>"
        b = ol[i][0] if i < len(ol) else "<none>"
        if a != b:
            n_diff += 1
            print("line %d (%s):\n  fit   %s\n  llama %s" % (i, ol[i][1] if i < len(ol) else "-", a, b))
            if n_diff >= max_diffs:
                break
    if n_diff == 0:
        print("equal")
    sys.exit(1 if n_diff else 0)


if __name__ == "__main__":
    main()
