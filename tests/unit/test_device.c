/*
 * test_device.c - the device model's own arithmetic (src/device.h).  What
 * the real llama.cpp does with these rules is tests/plan's job
 * (cpu_variants.sh runs every CPU variant this machine can); here the
 * variant choice for processors the machine is not, with the expected
 * variant worked out from ggml's score (cpu-feats.cpp: a variant runs when
 * CPUID has every feature its tags need; the highest 1 + sum of tag bits
 * wins), and the AMX packing sizes from mmq.cpp's get_row_size.
 */
#include "check.h"
#include "device.h"
#include "ggufmap/placement.h"

enum {
    BASE = GM_X86_SSE42 | GM_X86_AVX | GM_X86_F16C | GM_X86_FMA | GM_X86_BMI2 | GM_X86_AVX2,
    AVX512 = GM_X86_AVX512F | GM_X86_AVX512CD | GM_X86_AVX512VL | GM_X86_AVX512DQ | GM_X86_AVX512BW,
};

static void check_variant(uint32_t features, bool amx_ok, const char *want_variant, ggufmap_cpu want) {
    const char *variant = NULL;
    ggufmap_cpu cpu = gm_cpu_of_x86(features, amx_ok, &variant);
    CHECK_MSG(variant && strcmp(variant, want_variant) == 0, "features %#x: variant %s, want %s", features,
              variant ? variant : "(none)", want_variant);
    CHECK_MSG(cpu == want, "features %#x: rules %s, want %s", features, ggufmap_cpu_name(cpu), ggufmap_cpu_name(want));
}

static void test_variants(void) {
    /* Sapphire Rapids: every tag; score 1 + 2047 + ... = the top */
    const uint32_t spr = BASE | AVX512 | GM_X86_AVX512_VBMI | GM_X86_AVX512_VNNI | GM_X86_AVX512_BF16 |
                         GM_X86_AVX_VNNI | GM_X86_AMX_INT8;
    check_variant(spr, true, "sapphirerapids", GGUFMAP_CPU_X86_AMX);
    /* the kernel refuses AMX tile data: same variant, no AMX buffer type */
    check_variant(spr, false, "sapphirerapids", GGUFMAP_CPU_X86);
    /* Zen 4: no AMX -> zen4 (1 + 63 + 128 + 256 + 512 + 1024) beats cooperlake (no VBMI) */
    check_variant(spr & ~(uint32_t)GM_X86_AMX_INT8, true, "zen4", GGUFMAP_CPU_X86);
    /* Ice Lake: VBMI + VNNI, no BF16 -> icelake (1280) over cascadelake (1024), cannonlake (256) */
    check_variant(BASE | AVX512 | GM_X86_AVX512_VBMI | GM_X86_AVX512_VNNI, true, "icelake", GGUFMAP_CPU_X86);
    check_variant(BASE | AVX512 | GM_X86_AVX512_VNNI, true, "cascadelake", GGUFMAP_CPU_X86);
    check_variant(BASE | AVX512 | GM_X86_AVX512_VNNI | GM_X86_AVX512_BF16, true, "cooperlake", GGUFMAP_CPU_X86);
    check_variant(BASE | AVX512, true, "skylakex", GGUFMAP_CPU_X86);
    /* AVX-512F alone is not GGML_AVX512 (it needs CD, VL, DQ, BW too) */
    check_variant(BASE | GM_X86_AVX512F, true, "haswell", GGUFMAP_CPU_X86_AVX2);
    /* Alder Lake: AVX-VNNI, no AVX-512 -> alderlake (1 + 63 + 64), AVX2's rules */
    check_variant(BASE | GM_X86_AVX_VNNI, true, "alderlake", GGUFMAP_CPU_X86_AVX2);
    check_variant(BASE, true, "haswell", GGUFMAP_CPU_X86_AVX2);
    /* AVX2 without BMI2 runs no AVX2 variant: piledriver, nothing repacks */
    check_variant((uint32_t)BASE & ~(uint32_t)GM_X86_BMI2, true, "piledriver", GGUFMAP_CPU_GENERIC);
    check_variant(GM_X86_SSE42 | GM_X86_AVX | GM_X86_F16C, true, "ivybridge", GGUFMAP_CPU_GENERIC);
    check_variant(GM_X86_SSE42, true, "sse42", GGUFMAP_CPU_GENERIC);
    check_variant(0, true, "x64", GGUFMAP_CPU_GENERIC);
    /* AMX_INT8 without AVX512-VNNI: sapphirerapids does not run */
    check_variant(BASE | AVX512 | GM_X86_AVX512_VBMI | GM_X86_AVX512_BF16 | GM_X86_AMX_INT8, true, "cannonlake",
                  GGUFMAP_CPU_X86);
}

static void test_names(void) {
    static const struct { const char *name; int rc; ggufmap_cpu cpu; } cases[] = {
        {"host", GGUFMAP_OK, GGUFMAP_CPU_HOST},          {"x86", GGUFMAP_OK, GGUFMAP_CPU_X86},
        {"x86-amx", GGUFMAP_OK, GGUFMAP_CPU_X86_AMX},    {"x86-avx2", GGUFMAP_OK, GGUFMAP_CPU_X86_AVX2},
        {"arm64", GGUFMAP_OK, GGUFMAP_CPU_ARM64},        {"generic", GGUFMAP_OK, GGUFMAP_CPU_GENERIC},
        {"sapphirerapids", GGUFMAP_OK, GGUFMAP_CPU_X86_AMX}, {"zen4", GGUFMAP_OK, GGUFMAP_CPU_X86},
        {"alderlake", GGUFMAP_OK, GGUFMAP_CPU_X86_AVX2}, {"haswell", GGUFMAP_OK, GGUFMAP_CPU_X86_AVX2},
        {"piledriver", GGUFMAP_OK, GGUFMAP_CPU_GENERIC}, {"x64", GGUFMAP_OK, GGUFMAP_CPU_GENERIC},
        {"Zen4", GGUFMAP_EINVAL, GGUFMAP_CPU_HOST},      {"", GGUFMAP_EINVAL, GGUFMAP_CPU_HOST},
        {"amx", GGUFMAP_EINVAL, GGUFMAP_CPU_HOST},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ggufmap_cpu cpu = GGUFMAP_CPU_HOST;
        int rc = ggufmap_cpu_parse(cases[i].name, &cpu);
        CHECK_MSG(rc == cases[i].rc && (rc || cpu == cases[i].cpu), "--cpu '%s': rc %d, %s", cases[i].name, rc,
                  ggufmap_cpu_name(cpu));
    }
    for (int c = GGUFMAP_CPU_HOST; c <= GGUFMAP_CPU_X86_AMX; c++) {
        ggufmap_cpu back;
        CHECK(ggufmap_cpu_parse(ggufmap_cpu_name((ggufmap_cpu)c), &back) == GGUFMAP_OK && back == (ggufmap_cpu)c);
    }
}

/* mmq.cpp get_row_size: K / blck blocks of (block bytes + extra) per row,
 * times ne[1] rows; the first matrix only */
static void test_amx_sizes(void) {
    enum { F16 = 1, Q4_0 = 2, Q8_0 = 8, Q4_K = 12, Q6_K = 14, IQ4_XS = 23, BF16 = 30 };
    const int64_t m[4] = {256, 64, 1, 1}, m3[4] = {64, 64, 3, 1};
    CHECK(gm_amx_alloc_size(Q4_0, m) == 64u * 8 * 18);         /* = nbytes */
    CHECK(gm_amx_alloc_size(Q8_0, m) == 64u * 8 * (34 + 4));   /* compensation */
    CHECK(gm_amx_alloc_size(Q4_K, m) == 64u * 1 * (144 + 4));  /* packed scales */
    CHECK(gm_amx_alloc_size(Q6_K, m) == 64u * 1 * 210);
    CHECK(gm_amx_alloc_size(IQ4_XS, m) == 64u * 1 * (136 + 2));
    CHECK(gm_amx_alloc_size(F16, m) == 256u * 64 * 2);         /* kept as it is */
    CHECK(gm_amx_alloc_size(Q8_0, m3) == 64u * 2 * 38);        /* gemma3n's altup_proj: one matrix of three */
    CHECK(gm_amx_takes(Q4_0, m, true) && !gm_amx_takes(Q4_0, m, false));
    CHECK(gm_amx_takes(Q4_K, m, true) && !gm_amx_takes(Q4_K, (int64_t[4]){512 + 32, 64, 1, 1}, true));
    CHECK(!gm_amx_takes(Q4_0, (int64_t[4]){256, 48, 1, 1}, true)); /* rows % 32 */
    CHECK(gm_amx_takes(F16, (int64_t[4]){48, 32, 1, 1}, true) && !gm_amx_takes(BF16, m, true));
    CHECK(gm_amx_takes(Q8_0, m3, true)); /* ne[2] is not looked at */
}

int main(void) {
    test_variants();
    test_names();
    test_amx_sizes();
    return check_summary();
}
