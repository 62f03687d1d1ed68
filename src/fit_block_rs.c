/*
 * fit_block_rs.c - the recurrent blocks llama.cpp builds its hybrid and
 * recurrent graphs from, over the shape-only graph (fit_block_rs.h).
 *
 * Data structure: the gm_llm of one graph; the recurrent memory's state
 * tensors (l->rs_r, l->rs_s: [n_embd_r or n_embd_s, rows]) are leafs with
 * memory.  Workload: one call per layer.  Fidelity: each function follows
 * the llama.cpp function it names op for op and expansion for expansion,
 * with the values a reserve graph sees (the memory's full context: head 0,
 * rs_z 0, n_rs = max(1, n_seq_max)), the context's rollback rows (K =
 * n_rs_seq + 1 snapshots per sequence) and llama.cpp's fused ops as enabled (every modelled device runs GATED_DELTA_NET, so
 * resolve_fused_ops keeps it).
 */
#include "fit_block_rs.h"

enum { T_F32 = 0, T_I32 = 26 };

static uint64_t f32s(int64_t n) { return (uint64_t)n * 4u; }

/* ------------------------------------------------------------------------ */
/* The recurrent memory                                                      */
/* ------------------------------------------------------------------------ */

/* n_rs of the memory's full context: its size, max(1, n_seq_max) */
static int64_t n_rs(const gm_llm *l) { return l->cp->sizes.n_seq_max > 0 ? l->cp->sizes.n_seq_max : 1; }

/* the snapshots a recurrent layer keeps per sequence: 1 + n_rs_seq */
static int64_t n_snapshots(const gm_llm *l) { return 1 + (int64_t)l->cp->n_rs_seq; }

/* the destination of snapshot slot s in a state tensor: its n_seqs rows of
 * rollback group s (group s starts s * mem_size rows in) */
static int32_t state_slot(gm_llm *l, int32_t all, int64_t row_elems, int64_t slot) {
    gm_graph *g = l->g;
    const uint64_t nb1 = g->t[all].nb[1];
    return gm_view_2d(g, all, row_elems, l->ub.n_seqs, nb1, (uint64_t)slot * (uint64_t)n_rs(l) * nb1);
}

void gm_rs_inp_build(gm_llm *l, gm_rs_inp *inp) {
    gm_graph *g = l->g;
    const int64_t n = n_rs(l), n_seqs = l->ub.n_seqs;
    inp->s_copy = gm_new_1d(g, T_I32, n);
    gm_set_input(g, inp->s_copy);
    inp->s_copy_main = gm_view_1d(g, inp->s_copy, n_seqs, 0);
    inp->s_copy_extra = gm_view_1d(g, inp->s_copy, n - n_seqs, (uint64_t)n_seqs * 4);
}

void gm_inp_mem_hybrid(gm_llm *l, gm_rs_inp *rs, gm_attn_inp *attn) {
    gm_rs_inp_build(l, rs);
    gm_attn_inp_kv(l, &l->kv, attn);
}

int32_t gm_build_rs_with(gm_llm *l, const gm_rs_inp *inp, int32_t s, int64_t state_size, gm_rs_rows_fn rows,
                         void *ctx) {
    gm_graph *g = l->g;
    const int64_t n_seqs = l->ub.n_seqs, n = n_rs(l);
    int32_t states = gm_reshape_2d(g, s, state_size, g->t[s].ne[1]);
    int32_t zero = gm_view_1d(g, states, state_size, 0);
    gm_expand(g, gm_unary_inplace(g, GM_OP_SCALE, zero));
    int32_t out = rows ? rows(l, ctx, states, inp->s_copy_main) : gm_get_rows(g, states, inp->s_copy_main);
    gm_expand(g, out);
    int32_t extra = gm_get_rows(g, states, inp->s_copy_extra);
    int32_t dst = gm_view_2d(g, s, state_size, n - n_seqs, g->t[s].nb[1], (uint64_t)n_seqs * g->t[s].nb[1]);
    gm_expand(g, gm_cpy(g, extra, dst));
    return out;
}

int32_t gm_build_rs(gm_llm *l, const gm_rs_inp *inp, int32_t s, int64_t state_size) {
    return gm_build_rs_with(l, inp, s, state_size, NULL, NULL);
}

int32_t gm_build_conv_state(gm_llm *l, const gm_rs_inp *inp, int32_t conv_states_all, int32_t x, int64_t kernel,
                            int64_t channels) {
    gm_graph *g = l->g;
    const int64_t n_seqs = l->ub.n_seqs, row_count = (kernel - 1) * channels, K = n_snapshots(l);
    int32_t states = gm_build_rs(l, inp, conv_states_all, gm_n_embd_r(l->hp));
    states = gm_reshape_3d(g, states, kernel - 1, channels, n_seqs);
    int32_t input = gm_concat(g, states, gm_transpose(g, x), 0);
    /* the tail once per snapshot, slot s ending s tokens earlier (:495-520) */
    for (int64_t t = 1; t <= K; t++) {
        int64_t s_idx = g->t[input].ne[0] - g->t[states].ne[0] - K + t;
        if (s_idx < 0) s_idx = 0;
        const gm_tensor *in = &g->t[input];
        int32_t last = gm_view_3d(g, input, kernel - 1, channels, n_seqs, in->nb[1], in->nb[2], f32s(s_idx));
        gm_expand(g, gm_cpy(g, last, state_slot(l, conv_states_all, row_count, K - t)));
    }
    return input;
}

/* ------------------------------------------------------------------------ */
/* The gated delta net                                                       */
/* ------------------------------------------------------------------------ */

void gm_build_gdn_beta_gate(gm_llm *l, int32_t cur, int il, int32_t *beta, int32_t *gate) {
    gm_graph *g = l->g;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens, nv = l->hp->ssm_dt_rank;
    *beta = gm_reshape_4d(g, gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_beta.weight", il), cur), 1, nv, nst, ns);
    *beta = gm_unary(g, GM_OP_UNARY, *beta);
    int32_t alpha = gm_reshape_3d(g, gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_alpha.weight", il), cur), nv, nst, ns);
    alpha = gm_unary(g, GM_OP_UNARY, gm_binary(g, GM_OP_ADD, alpha, gm_w(l, "blk.%d.ssm_dt.bias", il)));
    *gate = gm_binary(g, GM_OP_MUL, alpha, gm_w(l, "blk.%d.ssm_a", il));
    *gate = gm_reshape_4d(g, *gate, 1, nv, nst, ns);
}

/* build_gdn_l2_norm (models.h:14-18) */
static int32_t gdn_l2_norm(gm_graph *g, int32_t x) { return gm_unary(g, GM_OP_SCALE, gm_unary(g, GM_OP_RMS_NORM, x)); }

/* qwen3next's repeat interleave of q or k to n_v_heads (qwen3next.cpp:560-580) */
static int32_t repeat_interleave(gm_graph *g, int32_t x, int64_t hk, int64_t nk, int64_t nv, int64_t nst, int64_t ns) {
    int32_t r = gm_reshape_4d(g, x, hk, 1, nk, nst * ns);
    r = gm_repeat_4d(g, r, hk, gm_div(g, nv, nk), nk, nst * ns);
    return gm_reshape_4d(g, r, hk, nv, nst, ns);
}

/* build_recurrent_attn with build_delta_net_fused (delta-net-base.cpp:
 * 531-606, :335-378): the output view; the new state (or, with rollback
 * rows, the last min(n_seq_tokens, K) snapshots) copied into the memory */
static int32_t recurrent_attn(gm_llm *l, int32_t q, int32_t k, int32_t v, int32_t gate, int32_t beta, int32_t state,
                              int il) {
    gm_graph *g = l->g;
    const int64_t hv = g->t[v].ne[0], nv = g->t[v].ne[1], nst = g->t[v].ne[2], ns = g->t[v].ne[3], K = n_snapshots(l);
    const int32_t srcs[6] = { q, k, v, gate, beta, state };
    int32_t result =
        gm_op_shaped(g, GM_OP_GATED_DELTA_NET, T_F32, 2, (int64_t[4]){ hv * nv, nst * ns + K * hv * ns }, srcs, 6);
    int32_t output = gm_view_4d(g, result, hv, nv, nst, ns, f32s(hv), f32s(hv * nv), f32s(hv * nv * nst), 0);
    const int32_t s_all = l->rs_s[il];
    const int64_t n_embd_s = gm_n_embd_s(l->hp), D = hv * hv * nv;
    if (K == 1) {
        int32_t new_state = gm_view_4d(g, result, hv, hv, nv, ns, f32s(hv), f32s(hv * hv), f32s(hv * hv * nv),
                                       f32s(hv * nv * nst * ns));
        gm_expand(g, gm_cpy(g, new_state, gm_view_2d(g, s_all, n_embd_s, ns, g->t[s_all].nb[1], 0)));
        return output;
    }
    const int64_t n_written = nst < K ? nst : K;
    const uint64_t row = g->t[s_all].nb[1];
    int32_t src = gm_view_3d(g, result, D, ns, n_written, f32s(D), f32s(D * ns), f32s(hv * nv * nst * ns));
    int32_t dst = gm_view_3d(g, s_all, D, ns, n_written, row, (uint64_t)n_rs(l) * row, 0);
    gm_expand(g, gm_cpy(g, src, dst));
    return output;
}

int32_t gm_build_gdn(gm_llm *l, const gm_rs_inp *inp, int32_t conv_input, int32_t z, int32_t beta, int32_t gate,
                     int il, gm_gdn_repeat repeat) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens;
    const int64_t hk = hp->ssm_d_state, nk = hp->ssm_n_group, nv = hp->ssm_dt_rank, hv = gm_div(g, hp->ssm_d_inner, nv);
    const int64_t channels = hk * nk * 2 + hv * nv;
    int32_t state = gm_build_rs(l, inp, l->rs_s[il], gm_n_embd_s(hp));
    state = gm_reshape_4d(g, state, hv, hv, nv, ns);
    const int32_t conv_w = gm_w(l, "blk.%d.ssm_conv1d.weight", il);
    const int64_t n_t = g->t[conv_input].ne[0] - g->t[conv_w].ne[0] + 1;
    int32_t conv = gm_op_shaped(g, GM_OP_SSM_CONV, T_F32, 3, (int64_t[4]){ g->t[conv_w].ne[1], n_t, g->t[conv_input].ne[2] },
                                (int32_t[2]){ conv_input, conv_w }, 2);
    conv = gm_unary(g, GM_OP_UNARY, conv);
    const uint64_t nb1 = f32s(channels);
    int32_t q = gm_view_4d(g, conv, hk, nk, nst, ns, f32s(hk), nb1, nb1 * (uint64_t)nst, 0);
    int32_t k = gm_view_4d(g, conv, hk, nk, nst, ns, f32s(hk), nb1, nb1 * (uint64_t)nst, f32s(hk * nk));
    int32_t v = gm_view_4d(g, conv, hv, nv, nst, ns, f32s(hv), nb1, nb1 * (uint64_t)nst, f32s(2 * hk * nk));
    q = gdn_l2_norm(g, q);
    k = gdn_l2_norm(g, k);
    if (repeat == GM_GDN_REPEAT_INTERLEAVE && nk != nv) {
        q = repeat_interleave(g, q, hk, nk, nv, nst, ns);
        k = repeat_interleave(g, k, hk, nk, nv, nst, ns);
    }
    int32_t output = recurrent_attn(l, q, k, v, gate, beta, state, il);
    int32_t z2 = gm_reshape_4d(g, z, hv, nv, nst, ns);
    int32_t norm = gm_build_norm_rms(l, output, gm_w(l, "blk.%d.ssm_norm.weight", il), il);
    int32_t out = gm_binary(g, GM_OP_MUL, norm, gm_unary(g, GM_OP_UNARY, z2));
    out = gm_reshape_3d(g, out, hv * nv, nst, ns);
    out = gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_out.weight", il), out);
    return gm_reshape_2d(g, out, hp->n_embd, nst * ns);
}

/* ------------------------------------------------------------------------ */
/* Routed experts with a sigmoid-gated shared expert                         */
/* ------------------------------------------------------------------------ */

int32_t gm_build_moe_shexp_gated(gm_llm *l, int32_t cur, int il) {
    gm_graph *g = l->g;
    int32_t moe = gm_build_moe_ffn(l, cur, gm_w(l, "blk.%d.ffn_gate_inp.weight", il), gm_w(l, "blk.%d.ffn_up_exps.weight", il),
                                   gm_w(l, "blk.%d.ffn_gate_exps.weight", il), gm_w(l, "blk.%d.ffn_down_exps.weight", il),
                                   l->hp->n_expert, l->hp->n_expert_used, true);
    int32_t up = gm_w(l, "blk.%d.ffn_up_shexp.weight", il);
    if (up == GM_NONE) return moe;
    int32_t sh = gm_build_ffn(l, cur, up, gm_w(l, "blk.%d.ffn_gate_shexp.weight", il),
                              gm_w(l, "blk.%d.ffn_down_shexp.weight", il), false);
    int32_t sg = gm_unary(g, GM_OP_UNARY, gm_build_lora_mm(l, gm_w(l, "blk.%d.ffn_gate_inp_shexp.weight", il), cur));
    return gm_binary(g, GM_OP_ADD, moe, gm_binary(g, GM_OP_MUL, sh, sg));
}

/* ------------------------------------------------------------------------ */
/* Mamba-2                                                                   */
/* ------------------------------------------------------------------------ */

/* what the scan reads beside the states (get_ssm_rows' captures) */
typedef struct ssm_scan_args {
    int32_t x, dt, A, B, C;
    int64_t d_state, head_dim, n_head;
} ssm_scan_args;

/* get_ssm_rows (mamba-base.cpp:262-270): ggml_ssm_scan, K = 1, over the
 * states viewed [d_state, head_dim, n_head, slots]: a 1-D result, y then the
 * last states */
static int32_t ssm_scan_rows(gm_llm *l, void *ctx, int32_t states, int32_t ids) {
    gm_graph *g = l->g;
    const ssm_scan_args *a = ctx;
    int32_t ssm = gm_reshape_4d(g, states, a->d_state, a->head_dim, a->n_head, g->t[states].ne[1]);
    const gm_tensor *x = &g->t[a->x];
    const int64_t n = x->ne[0] * x->ne[1] * x->ne[2] * x->ne[3] +
                      n_snapshots(l) * a->d_state * a->head_dim * a->n_head * g->t[ids].ne[0];
    const int32_t srcs[7] = { ssm, a->x, a->dt, a->A, a->B, a->C, ids };
    return gm_op_shaped(g, GM_OP_SSM_SCAN, T_F32, 1, (int64_t[4]){ n }, srcs, 7);
}

int32_t gm_build_mamba2_layer(gm_llm *l, const gm_rs_inp *inp, int32_t cur, int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t d_conv = hp->ssm_d_conv, d_inner = hp->ssm_d_inner, d_state = hp->ssm_d_state;
    const int64_t n_head = hp->ssm_dt_rank, head_dim = gm_div(g, d_inner, n_head), n_group = hp->ssm_n_group;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens, channels = d_inner + 2 * n_group * d_state;
    const int32_t r_all = l->rs_r[il], s_all = l->rs_s[il];
    int32_t conv = gm_build_rs(l, inp, r_all, gm_n_embd_r(hp));
    conv = gm_reshape_3d(g, conv, d_conv - 1, channels, ns);
    int32_t zx = gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_in.weight", il), cur);
    zx = gm_reshape_3d(g, zx, g->t[zx].ne[0], nst, ns);
    const uint64_t nb1 = g->t[zx].nb[1], nb2 = g->t[zx].nb[2];
    int32_t z = gm_view_4d(g, zx, head_dim, n_head, nst, ns, f32s(head_dim), nb1, nb2, 0);
    int32_t xbc = gm_view_3d(g, zx, channels, nst, ns, nb1, nb2, f32s(d_inner));
    int32_t dt = gm_view_3d(g, zx, n_head, nst, ns, nb1, nb2, f32s(2 * d_inner + 2 * n_group * d_state));
    /* the convolution, its last d_conv - 1 columns stored per snapshot */
    int32_t conv_x = gm_concat(g, conv, gm_transpose(g, xbc), 0);
    const int64_t K = n_snapshots(l), n_written = nst < K ? nst : K;
    for (int64_t slot = 0; slot < n_written; slot++) {
        const gm_tensor *cx = &g->t[conv_x];
        int32_t last = gm_view_3d(g, conv_x, d_conv - 1, channels, ns, cx->nb[1], cx->nb[2], (uint64_t)(nst - slot) * cx->nb[0]);
        gm_expand(g, gm_cpy(g, last, state_slot(l, r_all, (d_conv - 1) * channels, slot)));
    }
    const int32_t conv_w = gm_w(l, "blk.%d.ssm_conv1d.weight", il);
    xbc = gm_op_shaped(g, GM_OP_SSM_CONV, T_F32, 3, (int64_t[4]){ g->t[conv_w].ne[1], nst, ns }, (int32_t[2]){ conv_x, conv_w }, 2);
    xbc = gm_binary(g, GM_OP_ADD, xbc, gm_w(l, "blk.%d.ssm_conv1d.bias", il));
    xbc = gm_unary(g, GM_OP_UNARY, xbc);
    /* the scan */
    const uint64_t xb1 = g->t[xbc].nb[1], xb2 = g->t[xbc].nb[2];
    ssm_scan_args a = { .d_state = d_state, .head_dim = head_dim, .n_head = n_head };
    a.x = gm_view_4d(g, xbc, head_dim, n_head, nst, ns, f32s(head_dim), xb1, xb2, 0);
    a.B = gm_view_4d(g, xbc, d_state, n_group, nst, ns, f32s(d_state), xb1, xb2, f32s(d_inner));
    a.C = gm_view_4d(g, xbc, d_state, n_group, nst, ns, f32s(d_state), xb1, xb2, f32s(d_inner + n_group * d_state));
    a.dt = gm_binary(g, GM_OP_ADD, gm_cont(g, dt), gm_w(l, "blk.%d.ssm_dt.bias", il));
    a.A = gm_w(l, "blk.%d.ssm_a", il);
    int32_t y_ssm = gm_build_rs_with(l, inp, s_all, gm_n_embd_s(hp), ssm_scan_rows, &a);
    const int64_t D = d_state * d_inner, n_x = head_dim * n_head * nst * ns;
    const uint64_t s_nb1 = g->t[s_all].nb[1];
    int32_t src = gm_view_3d(g, y_ssm, D, ns, n_written, f32s(D), f32s(D * ns), f32s(n_x));
    int32_t dst = gm_view_3d(g, s_all, D, ns, n_written, s_nb1, s_nb1 * (uint64_t)n_rs(l), 0);
    gm_expand(g, gm_cpy(g, src, dst));
    const uint64_t x_nb1 = g->t[a.x].nb[1];
    int32_t y = gm_view_4d(g, y_ssm, head_dim, n_head, nst, ns, x_nb1, x_nb1 * (uint64_t)n_head,
                           x_nb1 * (uint64_t)(n_head * nst), 0);
    y = gm_binary(g, GM_OP_ADD, y, gm_binary(g, GM_OP_MUL, a.x, gm_w(l, "blk.%d.ssm_d", il)));
    y = gm_glu_split(g, gm_cont(g, z), y);
    const int32_t norm_w = gm_w(l, "blk.%d.ssm_norm.weight", il);
    if (norm_w != GM_NONE) {
        y = gm_reshape_4d(g, y, gm_div(g, d_inner, n_group), n_group, nst, ns);
        y = gm_build_norm_rms(l, y, norm_w, il);
    }
    y = gm_reshape_2d(g, y, d_inner, nst * ns);
    return gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_out.weight", il), y);
}

/* ------------------------------------------------------------------------ */
/* LFM2's short convolution                                                  */
/* ------------------------------------------------------------------------ */

int32_t gm_build_shortconv(gm_llm *l, const gm_rs_inp *inp, int32_t cur, int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens, n_embd = hp->n_embd;
    const int64_t d_conv = (int64_t)hp->shortconv_l_cache - 1;
    const int32_t r_all = l->rs_r[il];
    cur = gm_reshape_3d(g, cur, g->t[cur].ne[0], nst, ns);
    int32_t bcx = gm_build_lora_mm(l, gm_w(l, "blk.%d.shortconv.in_proj.weight", il), cur);
    const gm_tensor *t = &g->t[bcx];
    const int64_t chunk = t->ne[0] / 3;
    const uint64_t nb1 = t->nb[1], nb2 = t->nb[2];
    int32_t b = gm_view_3d(g, bcx, chunk, t->ne[1], t->ne[2], nb1, nb2, 0);
    int32_t c = gm_view_3d(g, bcx, chunk, t->ne[1], t->ne[2], nb1, nb2, f32s(chunk));
    int32_t x = gm_view_3d(g, bcx, chunk, t->ne[1], t->ne[2], nb1, nb2, f32s(2 * chunk));
    int32_t bx = gm_transpose(g, gm_binary(g, GM_OP_MUL, b, x));
    int32_t conv = gm_build_rs(l, inp, r_all, gm_n_embd_r(hp));
    conv = gm_reshape_3d(g, conv, d_conv, n_embd, ns);
    bx = gm_concat(g, conv, bx, 0);
    /* slot s: the state s tokens back (causal: K = n_rs_seq + 1 snapshots) */
    const int64_t K = n_snapshots(l), n_written = nst < K ? nst : K;
    for (int64_t slot = 0; slot < n_written; slot++) {
        const gm_tensor *bt = &g->t[bx];
        int32_t snap = gm_view_3d(g, bx, d_conv, bt->ne[1], bt->ne[2], bt->nb[1], bt->nb[2], f32s(bt->ne[0] - d_conv - slot));
        gm_expand(g, gm_cpy(g, snap, state_slot(l, r_all, d_conv * n_embd, slot)));
    }
    const int32_t kernel = gm_w(l, "blk.%d.shortconv.conv.weight", il);
    const int64_t n_t = g->t[bx].ne[0] - g->t[kernel].ne[0] + 1;
    int32_t conv_out = gm_op_shaped(g, GM_OP_SSM_CONV, T_F32, 3, (int64_t[4]){ g->t[kernel].ne[1], n_t, g->t[bx].ne[2] },
                                    (int32_t[2]){ bx, kernel }, 2);
    int32_t y = gm_binary(g, GM_OP_MUL, c, conv_out);
    y = gm_build_lora_mm(l, gm_w(l, "blk.%d.shortconv.out_proj.weight", il), y);
    return gm_reshape_2d(g, y, g->t[y].ne[0], nst * ns);
}

/* ------------------------------------------------------------------------ */
/* RWKV-7                                                                    */
/* ------------------------------------------------------------------------ */

/* mm(w2, act(mm(w1, x))) + w0: the time mix's low-rank projections */
static int32_t lora_pair(gm_llm *l, int il, const char *w1, const char *w2, int32_t x, bool tanh_between) {
    gm_graph *g = l->g;
    int32_t h = gm_mul_mat(g, gm_w(l, w1, il), x);
    if (tanh_between) h = gm_unary(g, GM_OP_UNARY, h);
    return gm_mul_mat(g, gm_w(l, w2, il), h);
}

int32_t gm_build_rwkv7_time_mix(gm_llm *l, const gm_rs_inp *inp, int32_t cur, int32_t x_prev, int32_t *v_first, int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n = l->ub.n_tokens, ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens, n_embd = hp->n_embd;
    const int64_t hs = hp->wkv_head_size, hc = gm_div(g, n_embd, hs);
    const bool gating = gm_w(l, "blk.%d.time_mix_g1.weight", il) != GM_NONE && gm_w(l, "blk.%d.time_mix_g2.weight", il) != GM_NONE;
    int32_t sx = gm_binary(g, GM_OP_SUB, x_prev, cur);
    sx = gm_repeat_4d(g, sx, n_embd, nst, ns, gating ? 6 : 5);
    int32_t xxx = gm_binary(g, GM_OP_ADD, gm_binary(g, GM_OP_MUL, sx, gm_w(l, "blk.%d.time_mix_lerp_fused.weight", il)), cur);
    int32_t xs[6];
    for (int i = 0; i < (gating ? 6 : 5); i++) xs[i] = gm_view_2d(g, xxx, n_embd, n, g->t[xxx].nb[1], f32s(n_embd * n * i));
    int32_t r = gm_build_lora_mm(l, gm_w(l, "blk.%d.time_mix_receptance.weight", il), xs[0]);
    int32_t w = gm_binary(g, GM_OP_ADD, lora_pair(l, il, "blk.%d.time_mix_w1.weight", "blk.%d.time_mix_w2.weight", xs[1], true),
                          gm_w(l, "blk.%d.time_mix_w0.weight", il));
    w = gm_unary(g, GM_OP_UNARY, gm_unary(g, GM_OP_SCALE, gm_unary(g, GM_OP_UNARY, w)));
    int32_t k = gm_build_lora_mm(l, gm_w(l, "blk.%d.time_mix_key.weight", il), xs[2]);
    int32_t v = gm_build_lora_mm(l, gm_w(l, "blk.%d.time_mix_value.weight", il), xs[3]);
    if (*v_first == GM_NONE) {
        *v_first = v;
    } else {
        int32_t mix = gm_binary(g, GM_OP_ADD, lora_pair(l, il, "blk.%d.time_mix_v1.weight", "blk.%d.time_mix_v2.weight", xs[3], false),
                                gm_w(l, "blk.%d.time_mix_v0.weight", il));
        v = gm_binary(g, GM_OP_ADD, v, gm_binary(g, GM_OP_MUL, gm_binary(g, GM_OP_SUB, *v_first, v), gm_unary(g, GM_OP_UNARY, mix)));
    }
    int32_t gate = GM_NONE;
    if (gating) {
        int32_t h = gm_unary(g, GM_OP_UNARY, gm_mul_mat(g, gm_w(l, "blk.%d.time_mix_g1.weight", il), xs[5]));
        gate = gm_mul_mat(g, gm_w(l, "blk.%d.time_mix_g2.weight", il), h);
    }
    int32_t a = gm_binary(g, GM_OP_ADD, lora_pair(l, il, "blk.%d.time_mix_a1.weight", "blk.%d.time_mix_a2.weight", xs[4], false),
                          gm_w(l, "blk.%d.time_mix_a0.weight", il));
    a = gm_unary(g, GM_OP_UNARY, a);
    int32_t kk = gm_reshape_3d(g, gm_binary(g, GM_OP_MUL, k, gm_w(l, "blk.%d.time_mix_k_k.weight", il)), hs, hc, n);
    kk = gm_unary(g, GM_OP_L2_NORM, kk);
    int32_t ka = gm_binary(g, GM_OP_MUL, k, gm_w(l, "blk.%d.time_mix_k_a.weight", il));
    k = gm_binary(g, GM_OP_ADD, k, gm_binary(g, GM_OP_SUB, gm_binary(g, GM_OP_MUL, a, ka), ka));
    r = gm_reshape_3d(g, r, hs, hc, n);
    w = gm_reshape_3d(g, w, hs, hc, n);
    k = gm_reshape_3d(g, k, hs, hc, n);
    v = gm_reshape_3d(g, v, hs, hc, n);
    a = gm_reshape_3d(g, a, hs, hc, n);
    const int32_t s_all = l->rs_s[il];
    int32_t state = gm_build_rs(l, inp, s_all, gm_n_embd_s(hp));
    const int32_t srcs[7] = { r, w, k, v, gm_unary(g, GM_OP_UNARY, kk), gm_binary(g, GM_OP_MUL, kk, a), state };
    int32_t wkv = gm_op_shaped(g, GM_OP_RWKV_WKV7, T_F32, 2, (int64_t[4]){ hs * hc, n + hs * g->t[state].ne[1] }, srcs, 7);
    cur = gm_view_1d(g, wkv, n_embd * n, 0);
    int32_t new_state = gm_view_1d(g, wkv, n_embd * hs * ns, f32s(n_embd * n));
    gm_expand(g, gm_cpy(g, new_state, gm_view_1d(g, s_all, gm_n_embd_s(hp) * ns, 0)));
    const int32_t ln = gm_w(l, "blk.%d.time_mix_ln.weight", il), ln_b = gm_w(l, "blk.%d.time_mix_ln.bias", il);
    if (ln != GM_NONE && ln_b != GM_NONE) {
        cur = gm_unary(g, GM_OP_NORM, gm_reshape_3d(g, cur, gm_div(g, n_embd, hc), hc, n));
        cur = gm_reshape_2d(g, cur, n_embd, n);
        cur = gm_binary(g, GM_OP_ADD, gm_binary(g, GM_OP_MUL, cur, ln), ln_b);
    } else {
        cur = gm_reshape_2d(g, cur, n_embd, n);
    }
    int32_t r_k = gm_reshape_2d(g, gm_w(l, "blk.%d.time_mix_r_k.weight", il), hs, hc);
    int32_t rk = gm_sum_rows(g, gm_binary(g, GM_OP_MUL, gm_binary(g, GM_OP_MUL, k, r), r_k));
    cur = gm_binary(g, GM_OP_ADD, cur, gm_reshape_2d(g, gm_binary(g, GM_OP_MUL, v, rk), n_embd, n));
    if (gating) cur = gm_binary(g, GM_OP_MUL, cur, gate);
    cur = gm_build_lora_mm(l, gm_w(l, "blk.%d.time_mix_output.weight", il), cur);
    return gm_reshape_3d(g, cur, n_embd, nst, ns);
}

int32_t gm_build_rwkv7_channel_mix(gm_llm *l, int32_t cur, int32_t x_prev, int il) {
    gm_graph *g = l->g;
    int32_t sx = gm_binary(g, GM_OP_SUB, x_prev, cur);
    int32_t xk = gm_binary(g, GM_OP_ADD, gm_binary(g, GM_OP_MUL, sx, gm_w(l, "blk.%d.channel_mix_lerp_k.weight", il)), cur);
    int32_t k = gm_build_lora_mm(l, gm_w(l, "blk.%d.channel_mix_key.weight", il), xk);
    k = gm_unary(g, GM_OP_SQR, gm_unary(g, GM_OP_UNARY, k));
    return gm_build_lora_mm(l, gm_w(l, "blk.%d.channel_mix_value.weight", il), k);
}
