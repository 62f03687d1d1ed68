// web/library_ggufmap.js - the browser's side of src/byte_source_web.c,
// linked into ggufmap.js (emcc --js-library).  Each function is a thin
// bridge to Module.transport (web/worker.js), which owns the requests, the
// streams and the picked files; the C side owns every decision (ranges,
// checks, retries, messages).  gm_js_request and gm_js_read wait for the
// network: the wasm is suspended meanwhile (Asyncify, ASYNCIFY_IMPORTS).
//
// The answer record's layout is byte_source_web.c's gm_web_answer (its
// _Static_assert pins the offsets used here).
//
// /tmp holds sparse files (gmSparseFS): plan's advice runs repack's dry
// run, which writes each candidate's header into a scratch file sized as
// the whole output (ftruncate) and reads it back as a model.  Emscripten's
// MEMFS would allocate those bytes (a model's size); here only what is
// written takes memory, in 64 KiB chunks, and holes read as zeros, as on a
// disk.

mergeInto(LibraryManager.library, {
  $gmSparseFS__deps: ['$FS', '$MEMFS'],
  $gmSparseFS__postset: "addOnPreRun(function () { FS.mount(gmSparseFS, {}, '/tmp'); });",
  $gmSparseFS: {
    CHUNK: 65536,
    mount: function (mount) {
      return gmSparseFS.createNode(null, '/', 16384 /* S_IFDIR */ | 511, 0);
    },
    createNode: function (parent, name, mode, dev) {
      const node = MEMFS.createNode(parent, name, mode, dev);
      if (FS.isDir(node.mode)) {
        node.node_ops = Object.assign({}, MEMFS.ops_table.dir.node, { mknod: gmSparseFS.createNode });
      } else if (FS.isFile(node.mode)) {
        node.node_ops = gmSparseFS.fileNode;
        node.stream_ops = gmSparseFS.fileStream;
        node.chunks = new Map();
      }
      return node;
    },
    fileNode: {
      getattr: function (node) {
        const attr = MEMFS.node_ops.getattr(node);
        attr.blocks = node.chunks.size * (gmSparseFS.CHUNK / 512);
        return attr;
      },
      setattr: function (node, attr) {
        if (attr.mode !== undefined) node.mode = attr.mode;
        if (attr.timestamp !== undefined) node.timestamp = attr.timestamp;
        if (attr.size === undefined) return;
        const C = gmSparseFS.CHUNK;
        for (const k of [...node.chunks.keys()]) if (k * C >= attr.size) node.chunks.delete(k);
        const tail = node.chunks.get(Math.floor(attr.size / C));
        if (tail) tail.fill(0, attr.size % C);
        node.usedBytes = attr.size;
      },
    },
    fileStream: {
      llseek: function (stream, offset, whence) { return MEMFS.stream_ops.llseek(stream, offset, whence); },
      read: function (stream, buffer, offset, length, position) {
        const node = stream.node, C = gmSparseFS.CHUNK;
        const n = Math.max(0, Math.min(length, node.usedBytes - position));
        for (let done = 0; done < n;) {
          const at = position + done, k = Math.floor(at / C), o = at % C, m = Math.min(n - done, C - o);
          const chunk = node.chunks.get(k);
          if (chunk) buffer.set(chunk.subarray(o, o + m), offset + done);
          else buffer.fill(0, offset + done, offset + done + m);
          done += m;
        }
        return n;
      },
      write: function (stream, buffer, offset, length, position) {
        const node = stream.node, C = gmSparseFS.CHUNK;
        for (let done = 0; done < length;) {
          const at = position + done, k = Math.floor(at / C), o = at % C, m = Math.min(length - done, C - o);
          let chunk = node.chunks.get(k);
          if (!chunk) node.chunks.set(k, (chunk = new Uint8Array(C)));
          chunk.set(buffer.subarray(offset + done, offset + done + m), o);
          done += m;
        }
        node.usedBytes = Math.max(node.usedBytes, position + length);
        node.timestamp = Date.now();
        return length;
      },
    },
  },

  $gmAnswer: {
    write: function (p, a) {
      const f = p >> 3;
      HEAPF64[f] = a.rangeFirst || 0;
      HEAPF64[f + 1] = a.rangeLast || 0;
      HEAPF64[f + 2] = a.rangeTotal || 0;
      HEAPF64[f + 3] = a.length || 0;
      HEAPF64[f + 4] = a.retryAfter === undefined ? -1 : a.retryAfter;
      const i = (p + 40) >> 2;
      HEAP32[i] = a.status | 0;
      HEAP32[i + 1] = a.hasRange ? 1 : 0;
      HEAP32[i + 2] = a.totalKnown ? 1 : 0;
      HEAP32[i + 3] = a.hasLength ? 1 : 0;
      HEAP32[i + 4] = a.fromCache ? 1 : 0;
      stringToUTF8(a.etag || '', p + 64, 256);
      stringToUTF8(a.message || '', p + 320, 512);
    },
  },

  gm_js_request__deps: ['$gmAnswer'],
  gm_js_request: function (id, url, start, end, timeoutS, answer) {
    return Asyncify.handleAsync(async function () {
      if (!Module.transport) return -1;
      const a = await Module.transport.request(id, UTF8ToString(url), start, end, timeoutS);
      gmAnswer.write(answer, a);
      return 0;
    });
  },

  gm_js_prefetch: function (id, url, start, end, timeoutS) {
    if (Module.transport) Module.transport.prefetch(id, UTF8ToString(url), start, end, timeoutS);
  },

  gm_js_read: function (id, dst, cap, msg, msgCap) {
    return Asyncify.handleAsync(async function () {
      try {
        const chunk = await Module.transport.read(id, cap);
        if (!chunk) return 0;
        HEAPU8.set(chunk, dst);
        return chunk.length;
      } catch (e) {
        stringToUTF8(String((e && e.message) || e), msg, msgCap);
        return -1;
      }
    });
  },

  gm_js_stop: function (id) {
    if (Module.transport) Module.transport.stop(id);
  },

  gm_js_file_size__deps: ['$gmSparseFS'],
  gm_js_file_size: function (name) {
    return Module.transport ? Module.transport.fileSize(UTF8ToString(name)) : -1;
  },

  gm_js_file_read: function (name, dst, start, n, msg, msgCap) {
    try {
      const bytes = Module.transport.fileRead(UTF8ToString(name), start, n);
      HEAPU8.set(bytes, dst);
      return bytes.length;
    } catch (e) {
      stringToUTF8(String((e && e.message) || e), msg, msgCap);
      return -1;
    }
  },
});
