/*
 * test_plan.c - the planners.
 *
 * The tight planner claims the fewest bytes (plus COST per range) under a
 * cap on the range count.  Here it is checked against brute force: for
 * random layouts of up to 12 runs, every subset of gaps to bridge is tried
 * and the best cost compared with the planner's.  It must also never be
 * worse than span, coalesce or runs under its own cost model.
 */
#include "check.h"
#include "ggufmap/plan.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t floor_p(uint64_t x, uint64_t p) { return x - x % p; }
static uint64_t ceil_p(uint64_t x, uint64_t p) { return x % p ? x + p - x % p : x; }

/* Cost of ranges under the tight model: page-aligned bytes + cost per range. */
static uint64_t model_cost(const ggufmap_range *r, uint32_t n, uint64_t page, uint64_t cost) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += ceil_p(r[i].last, page) - floor_p(r[i].first, page) + cost;
    return sum;
}

/* Every subset of bridged gaps: the best cost with at most max ranges. */
static uint64_t brute_force(const ggufmap_range *runs, uint32_t n, uint64_t page, uint64_t cost, uint32_t max) {
    uint64_t best = UINT64_MAX;
    ggufmap_range merged[16];
    for (uint32_t mask = 0; mask < (1u << (n - 1)); mask++) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (m > 0 && (mask & (1u << (i - 1))))
                merged[m - 1].last = runs[i].last;
            else
                merged[m++] = runs[i];
        }
        if (m > max) continue;
        uint64_t c = model_cost(merged, m, page, cost);
        if (c < best) best = c;
    }
    return best;
}

/* Ranges must cover every run and stay inside the span. */
static int covers(const ggufmap_range *runs, uint32_t n, const ggufmap_range *r, uint32_t m) {
    for (uint32_t i = 0; i < n; i++) {
        int in = 0;
        for (uint32_t k = 0; k < m && !in; k++) in = r[k].first <= runs[i].first && runs[i].last <= r[k].last;
        if (!in) return 0;
    }
    for (uint32_t k = 0; k < m; k++)
        if (r[k].first < runs[0].first || r[k].last > runs[n - 1].last || r[k].first >= r[k].last) return 0;
    for (uint32_t k = 1; k < m; k++)
        if (r[k].first < r[k - 1].last) return 0;
    return 1;
}

static void test_brute_force(void) {
    int mismatches = 0, bad_cover = 0, worse = 0, cases = 0;
    const uint64_t pages[3] = {1, 4096, 16384};
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t n = 1 + (uint32_t)(rnd() % 12);
        ggufmap_range runs[16];
        uint64_t at = rnd() % 100000;
        for (uint32_t i = 0; i < n; i++) {
            at += (rnd() % 4 == 0) ? rnd() % 64 : rnd() % 200000; /* small and large gaps */
            uint64_t len = 1 + rnd() % 90000;
            runs[i].first = at;
            runs[i].last = at + len;
            at += len;
        }
        uint64_t page = pages[rnd() % 3];
        uint64_t cost = rnd() % 3 == 0 ? 0 : rnd() % 150000;
        uint32_t max = 1 + (uint32_t)(rnd() % (n + 1));
        ggufmap_planner tight = {GGUFMAP_PLANNER_TIGHT, 0, cost, max};
        ggufmap_range out[16];
        uint32_t m = ggufmap_plan_ranges(&tight, page, runs, n, out);
        cases++;
        if (m > max || !covers(runs, n, out, m)) bad_cover++;
        uint64_t got = model_cost(out, m, page, cost), best = brute_force(runs, n, page, cost, max);
        if (got != best) {
            mismatches++;
            if (mismatches < 5)
                fprintf(stderr, "n=%u page=%llu cost=%llu max=%u: tight %llu, best %llu\n", n,
                        (unsigned long long)page, (unsigned long long)cost, max, (unsigned long long)got,
                        (unsigned long long)best);
        }
        /* Never worse than the other planners (those that respect the cap). */
        const ggufmap_planner others[3] = {
            {GGUFMAP_PLANNER_SPAN, 0, 0, 0},
            {GGUFMAP_PLANNER_COALESCE, 64 * 1024, 0, 0},
            {GGUFMAP_PLANNER_RUNS, 32 * 1024, 0, 64},
        };
        for (int k = 0; k < 3; k++) {
            ggufmap_range o[16];
            uint32_t om = ggufmap_plan_ranges(&others[k], page, runs, n, o);
            if (!covers(runs, n, o, om)) bad_cover++;
            if (om <= max && model_cost(o, om, page, cost) < got) worse++;
        }
    }
    printf("tight vs brute force: %d cases, %d mismatches, %d bad covers, %d worse than another planner\n", cases,
           mismatches, bad_cover, worse);
    CHECK(mismatches == 0);
    CHECK(bad_cover == 0);
    CHECK(worse == 0);
}

static void test_rules(void) {
    /* Three runs; gaps of 10 MiB and 100 MiB. */
    const uint64_t M = 1024 * 1024;
    ggufmap_range runs[3] = {{0, 5 * M}, {15 * M, 20 * M}, {120 * M, 121 * M}};
    ggufmap_range out[3];
    ggufmap_planner p;
    CHECK(ggufmap_planner_parse("span", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 1 &&
          out[0].first == 0 && out[0].last == 121 * M);
    CHECK(ggufmap_planner_parse("coalesce", &p) == 0 && p.gap == 64 * M);
    CHECK(ggufmap_plan_ranges(&p, 1, runs, 3, out) == 2 && out[0].last == 20 * M && out[1].first == 120 * M);
    CHECK(ggufmap_planner_parse("coalesce:10M", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 2);
    CHECK(ggufmap_planner_parse("coalesce:9M", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 3);
    CHECK(ggufmap_planner_parse("runs", &p) == 0 && p.gap == 32 * M && p.max_ranges == 64);
    CHECK(ggufmap_plan_ranges(&p, 1, runs, 3, out) == 2);
    CHECK(ggufmap_planner_parse("runs:10M", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 3); /* < 10M */
    CHECK(ggufmap_planner_parse("runs:1M:2", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 1); /* fallback */
    CHECK(ggufmap_planner_parse("tight", &p) == 0 && p.cost == 0 && p.max_ranges == 64);
    CHECK(ggufmap_plan_ranges(&p, 1, runs, 3, out) == 3);
    CHECK(ggufmap_planner_parse("tight:16M", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 2);
    CHECK(ggufmap_planner_parse("tight:0:1", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 1);
    CHECK(ggufmap_planner_parse("tight:0:2", &p) == 0 && ggufmap_plan_ranges(&p, 1, runs, 3, out) == 2 &&
          out[0].last == 20 * M); /* the cheaper gap is bridged */
    CHECK(ggufmap_planner_parse("bogus", &p) == GGUFMAP_EINVAL);
    CHECK(ggufmap_planner_parse("span:1", &p) == GGUFMAP_EINVAL);
    CHECK(ggufmap_planner_parse("tight:x", &p) == GGUFMAP_EINVAL);
    CHECK(ggufmap_planner_parse("coalesce:1M:3", &p) == GGUFMAP_EINVAL);
    /* Two runs sharing a 16 KiB page: bridging them costs nothing page-aligned. */
    ggufmap_range near[2] = {{0, 20000}, {30000, 50000}};
    CHECK(ggufmap_planner_parse("tight", &p) == 0 && ggufmap_plan_ranges(&p, 16384, near, 2, out) == 1);
    CHECK(ggufmap_plan_ranges(&p, 1, near, 2, out) == 2);
}

static void test_metal_views(void) {
    const uint64_t P = 16384, M = 1024 * 1024;
    uint64_t bytes;
    /* Fits: one view, page-aligned around an unaligned range. */
    CHECK(ggufmap_metal_views(100, 100 + 5 * M, P, 0, M, &bytes) == 1 && bytes == 5 * M + P);
    CHECK(ggufmap_metal_views(0, 5 * M, P, 8 * M, M, &bytes) == 1 && bytes == 5 * M);
    /* 20 MiB under an 8 MiB limit with 1 MiB tensors: overlap = (64 + 1) pages,
     * step = 8 MiB - 65 pages; views at 0, step, 2 step; the last one shorter. */
    uint64_t overlap = 65 * P, step = 8 * M - overlap;
    uint32_t n = ggufmap_metal_views(0, 20 * M, P, 8 * M, M, &bytes);
    CHECK(n == 3);
    CHECK(bytes == 8 * M + 8 * M + (20 * M - 2 * step));
    CHECK(ggufmap_ranges_resident((ggufmap_range[]){{1, 2}, {16383, 16385}}, 2, P) == 3 * P);

    /* Issue 24510's Metal log: a 30973.40 MiB span under maxBufferLength
     * 9093.12 MiB became views of 9093.12 x 3 + 4639.97 MiB.  (The log's
     * running total, 31919.72 MiB, is 0.39 MiB above the views' sum; it is
     * not reproduced.)  The sizes are rounded to 0.01 MiB; a largest tensor
     * of ~315 MiB (overlap 20180 pages) gives all four views within that. */
    double mib = 1048576.0;
    uint64_t span = (uint64_t)(30973.40 * mib), maxbuf = (uint64_t)(9093.12 * mib);
    uint64_t max_tensor = 20178 * P + 1;
    n = ggufmap_metal_views(0, span, P, maxbuf, max_tensor, &bytes);
    double last = (double)(bytes - 3 * maxbuf) / mib, total = (double)bytes / mib;
    CHECK_MSG(n == 4, "%u views", n);
    CHECK_MSG(last > 4639.95 && last < 4639.99, "last view %.2f MiB", last);
    CHECK_MSG(total > 31919.31 && total < 31919.35, "views %.2f MiB", total);
}

int main(void) {
    test_rules();
    test_brute_force();
    test_metal_views();
    return check_summary();
}
