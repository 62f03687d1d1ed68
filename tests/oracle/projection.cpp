/*
 * ggufmap-projection: what llama.cpp v0.5.0 itself projects a run to need,
 * per device, before it loads anything: common_get_device_memory_data
 * (common/fit.cpp, exported by the prebuilt libllama-common), the estimate
 * behind llama.cpp's --fit.  It loads the model with no_alloc (no weight is
 * mapped or read, nothing is allocated but the recurrent state) and creates
 * the context in llama.cpp's size-only mode, then sums llama.cpp's memory
 * breakdown per device: model (weights, as allocated tensors), context (KV
 * cache and recurrent state) and compute.
 *
 * tests/fit compares these figures with `ggufmap fit` (docs/fit.md's error
 * table); the options spell the oracle's (a subset: placement and context).
 *
 *   ggufmap-projection [--fake-gpu metal|cuda] [--ngl N|all] [--no-repack]
 *                      [--ctx N] [--np N] [--ctk T] [--ctv T] [--fa on|off|auto]
 *                      [--ub N] [--b N] [--swa-full] [--kv-unified] [--nkvo]
 *                      [--embd] MODEL.gguf
 *
 * Output: one line per device, the model's devices first, then the host:
 *   PROJ device=NAME model=BYTES context=BYTES compute=BYTES
 * then RESULT ok (exit 0), or RESULT fail (exit 1) when llama.cpp cannot
 * load the model or create the context.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

#include "fit.h"
#include "ggml-backend.h"
#include "llama.h"

extern "C" {
#include "fake_gpu.h"
}

namespace {

struct options {
    llama_model_params mp = llama_model_default_params();
    llama_context_params cp = llama_context_default_params();
    fake_gpu_kind fake = FAKE_GPU_NONE;
    const char * model = nullptr;
};

bool parse_long(const char * s, long max, long * out) {
    char * end;
    long v = std::strtol(s, &end, 10);
    if (*s == '\0' || *end || v < 0 || v > max) {
        return false;
    }
    *out = v;
    return true;
}

int type_by_name(const char * name) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char * n = ggml_type_name((ggml_type) t);
        if (n && std::strcmp(n, name) == 0) {
            return t;
        }
    }
    return -1;
}

// one option with a value; false on a bad value
bool apply_value(options & o, const std::string & a, const char * v) {
    long n = 0;
    if (a == "--fake-gpu") {
        o.fake = std::strcmp(v, "metal") == 0 ? FAKE_GPU_METAL : std::strcmp(v, "cuda") == 0 ? FAKE_GPU_CUDA : FAKE_GPU_NONE;
        return std::strcmp(v, "metal") == 0 || std::strcmp(v, "cuda") == 0 || std::strcmp(v, "none") == 0;
    }
    if (a == "--ngl") {
        if (std::strcmp(v, "all") == 0) {
            o.mp.n_gpu_layers = -1;
            return true;
        }
        if (!parse_long(v, 100000, &n)) return false;
        o.mp.n_gpu_layers = (int32_t) n;
        return true;
    }
    if (a == "--ctk" || a == "--ctv") {
        int t = type_by_name(v);
        (a == "--ctk" ? o.cp.type_k : o.cp.type_v) = (ggml_type) t;
        return t >= 0;
    }
    if (a == "--fa") {
        o.cp.flash_attn_type = std::strcmp(v, "on") == 0 ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                             : std::strcmp(v, "off") == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
        return std::strcmp(v, "on") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "auto") == 0;
    }
    if (!parse_long(v, 1l << 30, &n)) return false;
    if (a == "--ctx") o.cp.n_ctx = (uint32_t) n;
    else if (a == "--np") o.cp.n_seq_max = (uint32_t) n;
    else if (a == "--ub") o.cp.n_ubatch = (uint32_t) n;
    else if (a == "--b") o.cp.n_batch = (uint32_t) n;
    else return false;
    return true;
}

bool parse(int argc, char ** argv, options & o) {
    o.mp.n_gpu_layers = 0;
    o.cp.swa_full = false; // llama.cpp's CLI default
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--no-repack") o.mp.use_extra_bufts = false;
        else if (a == "--swa-full") o.cp.swa_full = true;
        else if (a == "--kv-unified") o.cp.kv_unified = true;
        else if (a == "--nkvo") o.cp.offload_kqv = false;
        else if (a == "--embd") o.cp.embeddings = true;
        else if (a.rfind("--", 0) == 0) {
            if (i + 1 >= argc || !apply_value(o, a, argv[i + 1])) {
                std::fprintf(stderr, "ggufmap-projection: bad or incomplete option %s\n", a.c_str());
                return false;
            }
            i++;
        } else if (!o.model) {
            o.model = argv[i];
        } else {
            std::fprintf(stderr, "ggufmap-projection: one model expected\n");
            return false;
        }
    }
    return o.model != nullptr;
}

void quiet_log(ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level == GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

const char * backend_dir() {
    static char dir[4096];
    Dl_info info;
    if (dladdr((void *) &llama_backend_init, &info) && info.dli_fname) {
        std::snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char * slash = std::strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            return dir;
        }
    }
    return nullptr;
}

} // namespace

int main(int argc, char ** argv) {
    options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr, "usage: ggufmap-projection [options] MODEL.gguf (see the source's header)\n");
        return 2;
    }
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    const char * dir = std::getenv("GGUFMAP_ORACLE_BACKEND_DIR");
    ggml_backend_load_all_from_path(dir && *dir ? dir : backend_dir());
    if (!fake_gpu_register(o.fake, 1)) {
        std::printf("RESULT fail\n");
        return 1;
    }
    std::vector<ggml_backend_dev_t> devs;
    uint32_t hp_ngl = 0, hp_n_ctx_train = 0, hp_n_expert = 0;
    common_device_memory_data_vec mem;
    try {
        mem = common_get_device_memory_data(o.model, &o.mp, &o.cp, devs, hp_ngl, hp_n_ctx_train, hp_n_expert,
                                            GGML_LOG_LEVEL_ERROR);
    } catch (const std::exception & e) {
        std::printf("ERR %s\nRESULT fail\n", e.what());
        return 1;
    }
    for (size_t i = 0; i < mem.size(); i++) {
        const char * name = i < devs.size() ? ggml_backend_dev_name(devs[i]) : "host";
        std::printf("PROJ device=%s model=%zu context=%zu compute=%zu\n", name, mem[i].model, mem[i].context,
                    mem[i].compute);
    }
    std::printf("RESULT ok\n");
    llama_backend_free();
    return 0;
}
