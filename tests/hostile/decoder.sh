#!/bin/sh
# decoder.sh — hostile inputs of the encoder-decoder commands: `linattn block --layer
# decoder` and `linattn model`. A memory of the wrong width or batch, missing weight
# tensors (a cross-attention tensor, a final norm, one tensor of a later layer), a
# source and target that disagree (D, batch, one batched and one not, a zero length),
# token ids without their table or outside it: each exits 2 with exactly one line
# `linattn: ...` on stderr and writes nothing (no output, no temporary beside it).
# Usage: sh tests/hostile/decoder.sh build/linattn
set -u
bin=${1:?usage: decoder.sh path/to/linattn}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail, refused

# refused_clean NAME ARGS...: refused, and nothing at $tmp/y.npy or beside it
refused_clean() {
    name=$1
    shift
    refused "$name" "$@" --out "$tmp/y.npy"
    if [ -n "$(ls "$tmp" | grep '^y\.npy')" ]; then fail "${name}_nothing_written" "$(ls "$tmp")"; fi
}

# a decoder layer (D = 8, d_ff = 16) in $tmp/dec, an nn.Transformer (2 + 2 layers) in
# $tmp/model, with embedding tables; inputs of every shape the cases need
/usr/bin/python3 - "$tmp" <<'PY'
import os, sys
import numpy as np
tmp, d, f = sys.argv[1], 8, 16
rng = np.random.default_rng(1)
def layer(folder, prefix, decoder):
    shapes = {"self_attn.in_proj_weight": (3 * d, d), "self_attn.in_proj_bias": (3 * d,),
              "self_attn.out_proj.weight": (d, d), "self_attn.out_proj.bias": (d,),
              "linear1.weight": (f, d), "linear1.bias": (f,), "linear2.weight": (d, f),
              "linear2.bias": (d,), "norm1.weight": (d,), "norm1.bias": (d,),
              "norm2.weight": (d,), "norm2.bias": (d,)}
    if decoder:
        shapes.update({"multihead_attn.in_proj_weight": (3 * d, d),
                       "multihead_attn.in_proj_bias": (3 * d,),
                       "multihead_attn.out_proj.weight": (d, d),
                       "multihead_attn.out_proj.bias": (d,), "norm3.weight": (d,),
                       "norm3.bias": (d,)})
    os.makedirs(folder, exist_ok=True)
    for k, s in shapes.items():
        np.save(os.path.join(folder, prefix + k + ".npy"), rng.normal(0, 0.3, s).astype(np.float32))
layer(tmp + "/dec", "", True)
for i in range(2):
    layer(tmp + "/model", "encoder.layers.%d." % i, False)
    layer(tmp + "/model", "decoder.layers.%d." % i, True)
for side in ("encoder", "decoder"):
    for k in ("weight", "bias"):
        np.save("%s/model/%s.norm.%s.npy" % (tmp, side, k), np.ones(d, np.float32))
for side, vocab in (("src", 5), ("tgt", 7)):
    np.save("%s/model/%s_embedding.weight.npy" % (tmp, side), rng.normal(0, 1, (vocab, d)).astype(np.float32))
save = lambda name, a: np.save(os.path.join(tmp, name), a)
save("x.npy", rng.normal(0, 1, (6, d)).astype(np.float32))
save("xb.npy", rng.normal(0, 1, (2, 6, d)).astype(np.float32))
save("mem.npy", rng.normal(0, 1, (4, d)).astype(np.float32))
save("mem_wide.npy", rng.normal(0, 1, (4, d + 1)).astype(np.float32))
save("mem_b3.npy", rng.normal(0, 1, (3, 4, d)).astype(np.float32))
save("mem_empty.npy", np.zeros((0, d), np.float32))
save("src_b3.npy", rng.normal(0, 1, (3, 4, d)).astype(np.float32))
save("ids.npy", np.array([[0, 4, 2], [1, 1, 3]], np.int64))
save("ids_far.npy", np.array([0, 9, 2], np.int64))
save("ids_negative.npy", np.array([0, -1], np.int32))
save("ids_3d.npy", np.zeros((1, 2, 3), np.int64))
PY
[ -d "$tmp/model" ] || { fail setup "could not write the weights (numpy?)"; exit 1; }
dec() { echo block --layer decoder --heads 2 --weights "$tmp/$1" --x "$tmp/$2" --memory "$tmp/$3"; }
# shellcheck disable=SC2046
{
    refused_clean block_decoder_memory_wrong_d $(dec dec x.npy mem_wide.npy)
    refused_clean block_decoder_memory_batch_3_x_unbatched $(dec dec x.npy mem_b3.npy)
    refused_clean block_decoder_memory_batch_3_x_batch_2 $(dec dec xb.npy mem_b3.npy)
    refused_clean block_decoder_memory_zero_length $(dec dec x.npy mem_empty.npy)
    refused_clean block_decoder_memory_missing $(dec dec x.npy nowhere.npy)
    refused_clean block_decoder_no_memory block --layer decoder --heads 2 --weights "$tmp/dec" --x "$tmp/x.npy"
    refused_clean block_encoder_given_memory block --heads 2 --weights "$tmp/dec" --x "$tmp/x.npy" --memory "$tmp/mem.npy"
}
cp -r "$tmp/dec" "$tmp/dec_missing" && rm "$tmp/dec_missing/multihead_attn.in_proj_bias.npy"
# shellcheck disable=SC2046
refused_clean block_decoder_missing_cross_tensor $(dec dec_missing x.npy mem.npy)
grep -q 'multihead_attn.in_proj_bias.npy' "$tmp/err" ||
    fail block_decoder_missing_cross_tensor_named "$(cat "$tmp/err")"

model() { echo model --heads 2 --weights "$tmp/$1" --src "$tmp/$2" --tgt "$tmp/$3"; }
# shellcheck disable=SC2046
{
    refused_clean model_src_wrong_d $(model model mem_wide.npy x.npy)
    refused_clean model_batch_disagrees $(model model src_b3.npy xb.npy)
    refused_clean model_src_batched_tgt_not $(model model src_b3.npy x.npy)
    refused_clean model_tgt_zero_length $(model model mem.npy mem_empty.npy)
    refused_clean model_token_id_beyond_table $(model model mem.npy ids_far.npy)
    refused_clean model_token_id_negative $(model model ids_negative.npy x.npy)
    refused_clean model_token_ids_3d $(model model ids_3d.npy x.npy)
    refused_clean model_no_such_folder $(model nowhere mem.npy x.npy)
    refused_clean model_heads_not_dividing model --heads 3 --weights "$tmp/model" --src "$tmp/mem.npy" --tgt "$tmp/x.npy"
}
for case in decoder.norm.bias encoder.layers.1.linear2.bias decoder.layers.1.multihead_attn.out_proj.weight \
    src_embedding.weight; do
    rm -rf "$tmp/m2" && cp -r "$tmp/model" "$tmp/m2" && rm "$tmp/m2/$case.npy"
    # shellcheck disable=SC2046
    refused_clean "model_missing_$case" $(model m2 ids.npy xb.npy)
    grep -q "$case.npy" "$tmp/err" || fail "model_missing_${case}_named" "$(cat "$tmp/err")"
done
rm -rf "$tmp/m2" && cp -r "$tmp/model" "$tmp/m2" && rm "$tmp/m2"/decoder.*
# shellcheck disable=SC2046
refused_clean model_no_decoder_layers $(model m2 mem.npy x.npy)

# the same inputs, well formed, run: the refusals above are about the input alone
# shellcheck disable=SC2046
if timeout 20 "$bin" $(model model ids.npy xb.npy) --out "$tmp/ok.npy" 2>"$tmp/err"; then
    echo "ok model_tokens_and_floats_run"
else
    fail model_tokens_and_floats_run "$(cat "$tmp/err")"
fi
# shellcheck disable=SC2046
if timeout 20 "$bin" $(dec dec xb.npy xb.npy) --out "$tmp/ok.npy" 2>"$tmp/err"; then
    echo "ok block_decoder_runs"
else
    fail block_decoder_runs "$(cat "$tmp/err")"
fi
exit $failed
