// label_extent.js SVG PNG_DIR: for every label left of the bars (<text x="24.0">)
// of a plan figure, draws it alone (same font attributes, the figure's font
// family) with rsvg-convert, decodes the PNG (zlib is node's), and prints
// "TEXT RIGHTMOST_INK_X" per label: the pixel extent a real renderer gives.
const fs = require("fs"), zlib = require("zlib"), { execFileSync } = require("child_process");
const svg = fs.readFileSync(process.argv[2], "utf8"), dir = process.argv[3];
const family = (svg.match(/font-family="([^"]*)"/) || [])[1] || "sans-serif";
// a non-interlaced 8-bit RGB/RGBA PNG into {w, h, px(x, y) -> [r, g, b]}
function decode(buf) {
  let pos = 8, w, h, ct, idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.toString("ascii", pos + 4, pos + 8), data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === "IHDR") { w = data.readUInt32BE(0); h = data.readUInt32BE(4); ct = data[9]; if (data[8] !== 8 || data[12]) throw "PNG kind"; }
    if (type === "IDAT") idat.push(data);
    pos += 12 + len;
  }
  const bpp = ct === 6 ? 4 : ct === 2 ? 3 : (() => { throw "PNG colour type " + ct; })();
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = w * bpp, out = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0, b = y ? out[(y - 1) * stride + x] : 0,
            c = x >= bpp && y ? out[(y - 1) * stride + x - bpp] : 0;
      const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
      const pred = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][f];
      out[y * stride + x] = (line[x] + pred) & 255;
    }
  }
  return { w, h, px: (x, y) => [out[y * stride + x * bpp], out[y * stride + x * bpp + 1], out[y * stride + x * bpp + 2], bpp === 4 ? out[y * stride + x * bpp + 3] : 255] };
}
let i = 0;
for (const m of svg.matchAll(/<text x="24\.0" y="[0-9.]+"([^>]*)>([^<]*)<\/text>/g)) {
  const one = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="30" font-family="${family}">` +
              `<rect width="100%" height="100%" fill="white"/><text x="24.0" y="20.0"${m[1]}>${m[2]}</text></svg>`;
  const s = `${dir}/label${i}.svg`, p = `${dir}/label${i++}.png`;
  fs.writeFileSync(s, one);
  execFileSync("rsvg-convert", ["-o", p, s]);
  const img = decode(fs.readFileSync(p));
  let right = -1;
  for (let y = 0; y < img.h; y++)
    for (let x = 0; x < img.w; x++) { const [r, g, b, a] = img.px(x, y); if (a > 0 && r + g + b < 600 && x > right) right = x; }
  console.log(`${m[2]}\t${right}`);
}
