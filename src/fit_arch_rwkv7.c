/*
 * fit_arch_rwkv7.c - the graph of rwkv7 (src/models/rwkv7.cpp): layer norms
 * with biases, token shift held in the recurrent state (two rows: the time
 * mix's and the channel mix's), the RWKV-7 time mix (fit_block_rs.c) and
 * channel mix per layer.
 */
#include "fit_arch_recurrent.h"
#include "fit_block_rs.h"

static int32_t norm(gm_llm *l, int32_t cur, const char *w, const char *b, int il) {
    return gm_build_norm(l, cur, gm_w(l, w, il), gm_w(l, b, il), false, il);
}

/* the last row of x [n_embd, n_seq_tokens, n_seqs] per sequence, or the
 * rows before it (the previous token of each) */
static int32_t last_row(gm_graph *g, int32_t x, int64_t n_embd, int64_t nst, int64_t ns) {
    const gm_tensor *t = &g->t[x];
    return gm_view_3d(g, x, n_embd, 1, ns, t->nb[1], t->nb[2], (uint64_t)(nst - 1) * (uint64_t)n_embd * 4);
}
static int32_t all_but_last(gm_graph *g, int32_t x, int64_t n_embd, int64_t nst, int64_t ns) {
    const gm_tensor *t = &g->t[x];
    return gm_view_3d(g, x, n_embd, nst - 1, ns, t->nb[1], t->nb[2], 0);
}

/* llama_model_rwkv7::graph (rwkv7.cpp:117-211) */
void gm_arch_rwkv7(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n_embd = hp->n_embd, nst = l->ub.n_seq_tokens, ns = l->ub.n_seqs, n = l->ub.n_tokens;
    gm_rs_inp rs;
    int32_t v_first = GM_NONE;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    inpL = norm(l, inpL, "token_embd_norm.weight", "token_embd_norm.bias", 0);
    gm_rs_inp_build(l, &rs);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        inpL = gm_reshape_3d(g, inpL, n_embd, nst, ns);
        /* build_rwkv_token_shift_load (llama-graph.cpp:3558-3577) */
        int32_t shift = gm_build_rs(l, &rs, l->rs_r[il], gm_n_embd_r(hp));
        shift = gm_reshape_3d(g, shift, n_embd, hp->token_shift_count, ns);
        const gm_tensor *st = &g->t[shift];
        int32_t att_shift = gm_view_3d(g, shift, n_embd, 1, ns, st->nb[1], st->nb[2], 0);
        int32_t ffn_shift = gm_view_3d(g, shift, n_embd, 1, ns, st->nb[1], st->nb[2], (uint64_t)n_embd * 4);
        int32_t att_norm = norm(l, inpL, "blk.%d.attn_norm.weight", "blk.%d.attn_norm.bias", il);
        int32_t x_prev = gm_concat(g, att_shift, all_but_last(g, att_norm, n_embd, nst, ns), 1);
        int32_t cur = gm_build_rwkv7_time_mix(l, &rs, att_norm, x_prev, &v_first, il);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpL);
        int32_t ffn_norm = norm(l, ffn_inp, "blk.%d.attn_norm_2.weight", "blk.%d.attn_norm_2.bias", il);
        x_prev = gm_concat(g, ffn_shift, all_but_last(g, ffn_norm, n_embd, nst, ns), 1);
        shift = gm_concat(g, last_row(g, att_norm, n_embd, nst, ns), last_row(g, ffn_norm, n_embd, nst, ns), 1);
        /* build_rwkv_token_shift_store (:3579-3597) */
        const int32_t r_all = l->rs_r[il];
        gm_expand(g, gm_cpy(g, gm_view_1d(g, shift, n_embd * ns * hp->token_shift_count, 0),
                            gm_view_1d(g, r_all, gm_n_embd_r(hp) * ns, 0)));
        ffn_inp = gm_reshape_2d(g, ffn_inp, n_embd, n);
        ffn_norm = gm_reshape_2d(g, ffn_norm, n_embd, n);
        x_prev = gm_reshape_2d(g, x_prev, n_embd, n);
        if (il == (int)hp->n_layer - 1) {
            ffn_inp = gm_get_rows(g, ffn_inp, out_ids);
            ffn_norm = gm_get_rows(g, ffn_norm, out_ids);
            x_prev = gm_get_rows(g, x_prev, out_ids);
        }
        cur = gm_build_rwkv7_channel_mix(l, ffn_norm, x_prev, il);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    int32_t cur = norm(l, inpL, "output_norm.weight", "output_norm.bias", -1);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}
