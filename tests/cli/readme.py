#!/usr/bin/env python3
"""The README's examples run and print what the README says they print.

    readme.py GGUFMAP FIXTURE README WORKDIR

Every fenced block of the README that holds a line starting with "$ " is an
example: each "$ COMMAND" runs in WORKDIR (bash, with ggufmap and
ggufmap-fixture first on PATH), and the lines shown under it, up to the next
"$ " line, must appear in what it printed (standard output and error), in
that order, each one whole. "…" stands for what the README leaves out: a
line that is only "…" skips any number of lines, and "…" inside a line
matches any text there; a last line "[exit status N]" is the status it must
exit with. Before the first example, WORKDIR gets the model
every example uses, made as the README's "Try it" makes it.
"""
import os
import re
import shutil
import subprocess
import sys

ggufmap, fixture, readme, work = (os.path.abspath(a) for a in sys.argv[1:5])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(os.path.join(work, "bin"))
for tool, name in ((ggufmap, "ggufmap"), (fixture, "ggufmap-fixture")):
    os.symlink(tool, os.path.join(work, "bin", name))
env = dict(os.environ, PATH=os.path.join(work, "bin") + os.pathsep + os.environ["PATH"], NO_COLOR="1")

text = open(readme, encoding="utf-8").read()
setup = "ggufmap-fixture --replica qwen3.8-flash-next -o Qwen3.8-Flash-Next"
if setup not in text:
    sys.exit(f"readme.py: the README no longer makes the examples' model with '{setup}'")
subprocess.run(setup, shell=True, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)

# examples: [(command, [expected lines])] in README order
examples = []
for block in re.findall(r"^```\n(.*?)^```$", text, flags=re.S | re.M):
    lines = block.rstrip("\n").split("\n")
    if not any(l.startswith("$ ") for l in lines):
        continue
    current = None
    for line in lines:
        if line.startswith("$ "):
            current = (line[2:], [])
            examples.append(current)
        elif current is not None:
            current[1].append(line)


def line_matches(want, got):
    if "…" not in want:
        return want == got
    pattern = ".*".join(re.escape(piece) for piece in want.split("…"))
    return re.fullmatch(pattern, got) is not None


def shown_in(expected, output):
    """Is every expected line in output, in order (a "…" line skips any)?"""
    at = 0
    for want in expected:
        if want == "…":
            continue
        while at < len(output) and not line_matches(want, output[at]):
            at += 1
        if at == len(output):
            return want
        at += 1
    return None


failed = 0
for command, expected in examples:
    run = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True)
    output = (run.stdout + run.stderr).rstrip("\n").split("\n")
    status = None
    if expected and re.fullmatch(r"\[exit status \d+\]", expected[-1]):
        status = int(expected.pop()[13:-1])
    missing = shown_in(expected, output)
    if missing is None and status is not None and run.returncode != status:
        missing = f"[exit status {status}]"
    if missing is None:
        print(f"ok: $ {command} (exit {run.returncode}, {len(expected)} lines shown)")
    else:
        failed += 1
        print(f"FAILED: $ {command}\n  the README shows: {missing}\n  it printed (exit {run.returncode}):")
        print("\n".join("    " + l for l in output))
print(f"{len(examples) - failed} of {len(examples)} README examples print what the README shows")
if not examples:
    sys.exit("readme.py: no example found in the README")
sys.exit(1 if failed else 0)
