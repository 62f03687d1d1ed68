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

    /* ggml-metal's rule (ggml_metal_buffer_map, ggml-metal-device.m:2219-2252
     * in v0.5.0), worked by hand on round numbers.  A buffer larger than
     * maxBufferLength becomes views of maxBufferLength each, every one
     * starting size_step after the previous, so that consecutive views
     * overlap by size_ovlp = (ceil(max_tensor / page) + 1) pages; the last
     * view runs to the page-aligned end.
     *   largest tensor: a Q4_K token embedding of 151,936 x 4,096 =
     *     151936 * 4096 / 256 * 144 = 350,060,544 B = 21,366 pages exactly,
     *     so size_ovlp = (21,366 + 1) pages = 350,076,928 B;
     *   maxBufferLength 9 GiB = 9,663,676,416 B,
     *     size_step = 9,663,676,416 - 350,076,928 = 9,313,599,488 B;
     *   the range starts 5,000,000 B into the file, 2,880 B into its page
     *     (5,000,000 - 305 * 16,384), and holds 30,000,000,000 B: the
     *     pointer is aligned down, size = 30,000,002,880 B, page-aligned
     *     1,831,055 pages = 30,000,005,120 B;
     *   views at i = 0, 1, 2 x size_step end at most at 2 x 9,313,599,488 +
     *     9,663,676,416 = 28,290,875,392 <= size: full views; at
     *     i = 3 x size_step = 27,940,798,464 the view would end past size, so
     *     it is 30,000,005,120 - 27,940,798,464 = 2,059,206,656 B; 4 x
     *     size_step = 37,254,397,952 >= size ends the loop.
     *   total: 3 x 9,663,676,416 + 2,059,206,656 = 31,050,235,904 B. */
    const uint64_t embd = 151936ull * 4096 / 256 * 144, maxbuf = 9ull << 30;
    CHECK(embd == 350060544ull && embd == 21366 * P);
    n = ggufmap_metal_views(5000000, 5000000 + 30000000000ull, P, maxbuf, embd, &bytes);
    CHECK_MSG(n == 4, "%u views", n);
    CHECK_MSG(bytes == 31050235904ull, "views %llu B", (unsigned long long)bytes);
    /* One page more of tensor: size_ovlp grows by a page, so each of the
     * three steps shrinks by one and the last view grows by three pages. */
    n = ggufmap_metal_views(5000000, 5000000 + 30000000000ull, P, maxbuf, embd + 1, &bytes);
    CHECK(n == 4 && bytes == 31050235904ull + 3 * P);
    /* A view that ends exactly at size is a full one, but ggml's loop still
     * starts another at 3 x size_step < size: it holds the overlap alone.
     * size = 2 x size_step + maxBufferLength (page-aligned start), views
     * 3 x 9,663,676,416 + (maxBufferLength - size_step = size_ovlp
     * 350,076,928) = 29,341,106,176 B. */
    uint64_t exact = 2 * (maxbuf - 21367 * P) + maxbuf;
    n = ggufmap_metal_views(0, exact, P, maxbuf, embd, &bytes);
    CHECK_MSG(n == 4 && bytes == 29341106176ull, "%u views, %llu B", n, (unsigned long long)bytes);
}

int main(void) {
    test_rules();
    test_brute_force();
    test_metal_views();
    return check_summary();
}
