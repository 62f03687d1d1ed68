#!/usr/bin/env bash
# The SVG figure of `ggufmap plan --svg`: rendered to PNG by rsvg-convert
# (librsvg: a real SVG renderer, so malformed XML or SVG fails here), and
# read back for what a person needs without the terminal: a title with the
# model and the placement, every shard's file name, one byte scale for all
# shards, each mapped buffer's figures, totals, the verdict, a legend, and
# one colour per buffer type in every picture.  `--svg -` writes the figure
# to standard output; file names with XML's special characters stay valid.
#   svg.sh GGUFMAP FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$(realpath "$1") fixture=$2 work=$3
. "$(dirname "$0")/lib.sh"
command -v rsvg-convert >/dev/null || { bad "rsvg-convert is missing (librsvg2-bin, scripts/deps.sh)"; summary; exit; }
fx() { "$fixture" "$@" >/dev/null || bad "fixture maker: $*"; }

# render SVG PNG: rsvg-convert accepts it and the PNG is 1200 px wide
render() {
  rsvg-convert -o "$2" "$1" 2>"$work/rsvg.err" && ok || { bad "rsvg-convert refused $1: $(cat "$work/rsvg.err")"; return; }
  [[ $(od -An -tx1 -j16 -N4 "$2" | tr -d ' \n') == 000004b0 ]] && ok || bad "$2 is not 1200 px wide"
}
# svgq FILE EXPR: EXPR evaluated by node with s = the SVG text
svgq() { node -e 's = require("fs").readFileSync(process.argv[1], "utf8"); console.log(eval(process.argv[2]))' "$1" "$2"; }

fx --arch llama --layers 4 --shards 3 --type f32 --order shuffle:3 -o "$work/m.gguf"
first=$work/m-00001-of-00003.gguf
expect 3 "plan --svg over a limit" "$ggufmap" plan "$first" --device metal -ngl 2 --limit 100K --svg "$work/m.svg"
render "$work/m.svg" "$work/m.png"
has "$work/m.svg" ">m-00001-of-00003.gguf</text>" "the title names the model"
has "$work/m.svg" "GPU MTL0: 4 layers, layer 3 and the output layer on the GPU" "the subtitle names the placement"
for k in 1 2 3; do has "$work/m.svg" "m-0000$k-of-00003.gguf  " "shard $k's file name"; done
has "$work/m.svg" "shard 3 of 3" "shards numbered from 1"
# one byte scale: each shard's bar is 700 px times its size over the largest
sizes=$(for k in 1 2 3; do stat -c %s "$work/m-0000$k-of-00003.gguf"; done | tr '\n' ,)
svgq "$work/m.svg" "
  const sizes = [${sizes%,}], max = Math.max(...sizes);
  const bars = [...s.matchAll(/<rect x=\"170.00\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"18.0\" fill=\"#e4e4e4\"/g)].map(m => +m[1]);
  bars.length === 3 && bars.every((w, i) => Math.abs(w - Math.max(1, 700 * sizes[i] / max)) < 0.01)" >"$work/scale"
[[ $(cat "$work/scale") == true ]] && ok || bad "the shards are not drawn to one byte scale"
has "$work/m.svg" ">byte offset</text>" "the ruler"
# figures for every mapped buffer, totals, verdict, legend
n_mapped=$("$ggufmap" plan "$first" --device metal -ngl 2 --json | node -e 'let t="";process.stdin.on("data",d=>t+=d).on("end",()=>console.log(JSON.parse(t).buffers.filter(b=>b.mapped).length))')
[[ $(grep -c '>span [^<]*: own [^<]*, foreign ' "$work/m.svg") == "$n_mapped" ]] && ok || bad "not one span figure per mapped buffer ($n_mapped)"
[[ $(grep -c '>planned [^<]* in [0-9]* range' "$work/m.svg") == "$n_mapped" ]] && ok || bad "not one planned figure per mapped buffer"
has "$work/m.svg" ">mapped by llama.cpp: " "totals"
has "$work/m.svg" "llama.cpp today: " "verdict"
has "$work/m.svg" "EXCEEDS the limit of 100.00 KiB" "verdict under the limit"
has "$work/m.svg" ">legend:</text>" "legend"
has "$work/m.svg" ">foreign bytes in a span</text>" "legend: foreign"

# one colour per buffer type, whatever the model and the device
fx --arch qwen3moe --layers 2 --type f32 --order reverse -o "$work/q.gguf"
"$ggufmap" plan "$work/q.gguf" --device cuda -ngl 1 --svg "$work/q.svg" >/dev/null 2>&1
render "$work/q.svg" "$work/q.png"
colour() { svgq "$1" "(s.match(/fill=\"(#[0-9a-f]{6})\"><title>$2,/) || [])[1]"; }
m_cpu=$(colour "$work/m.svg" token_embd.weight) q_cpu=$(colour "$work/q.svg" token_embd.weight)
m_gpu=$(colour "$work/m.svg" output.weight) q_gpu=$(colour "$work/q.svg" output.weight)
[[ $m_cpu == "$q_cpu" && $m_gpu == "$q_gpu" && $m_cpu != "$m_gpu" && $m_cpu == \#* && $m_gpu == \#* ]] && ok ||
  bad "colours: CPU $m_cpu / $q_cpu, GPU $m_gpu / $q_gpu"

# --svg -: the figure on standard output, nothing else
expect 0 "plan --svg -" "$ggufmap" plan "$first" --device metal -ngl 2 --svg -
head -c 5 "$work/out" | grep -q '^<svg ' && tail -n 1 "$work/out" | grep -q '^</svg>$' && ok || bad "--svg - output: $(head -c 100 "$work/out")"
cp "$work/out" "$work/stdout.svg"
render "$work/stdout.svg" "$work/stdout.png"

# a file name with XML's special characters (and a quote) stays well-formed
cp "$work/q.gguf" "$work/a&b<c>\"d.gguf"
expect 0 "plan --svg of a strange name" "$ggufmap" plan "$work/a&b<c>\"d.gguf" --svg "$work/strange.svg"
render "$work/strange.svg" "$work/strange.png"
has "$work/strange.svg" "a&amp;b&lt;c&gt;&quot;d.gguf" "escaped file name"

summary
