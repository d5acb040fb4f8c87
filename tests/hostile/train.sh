#!/bin/sh
# train.sh — hostile flags and files for `linattn train`: every bad value refused with exit
# 2 and one line `linattn: ...`, before anything is written (no log, no checkpoint); a
# --checkpoint that names a file or a folder of other files never replaced; a --resume
# folder that is missing, not a checkpoint or damaged refused; a control character in
# --data's path kept on its one line. Usage: train.sh build/linattn
set -u
bin=$(cd "$(dirname "${1:?usage: train.sh path/to/linattn}")" && pwd)/$(basename "$1")
t=$(mktemp -d)
tmp=$t
trap 'rm -rf "$t"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail, refused
cd "$t" || exit 1

tiny="--d-model 8 --heads 2 --d-ff 8 --layers 1 --seq-len 8 --batch 2 --steps 2 --threads 1"
# nothing_written NAME: neither log.csv nor ck/ appeared
nothing_written() {
    if [ -e log.csv ] || [ -e ck ]; then
        fail "$1" "a file was written"
        rm -rf log.csv ck
    fi
}
# train_refused NAME FLAGS...: refused (one line, exit 2) and nothing written
train_refused() {
    name=$1
    shift
    # shellcheck disable=SC2086
    refused "$name" train $tiny --log log.csv --checkpoint ck "$@"
    nothing_written "$name"
}

train_refused d_model_zero --d-model 0
train_refused heads_not_dividing --heads 3
train_refused seq_len_one --seq-len 1
train_refused batch_text --batch abc
train_refused steps_zero --steps 0
train_refused steps_negative --steps -5
train_refused lr_negative --lr -1
train_refused lr_nan --lr nan
train_refused lr_inf --lr inf
train_refused weight_decay_negative --weight-decay -0.1
train_refused clip_negative --clip -1
train_refused gamma_above_one --schedule step --gamma 2
train_refused gamma_without_step --gamma 0.5
train_refused min_lr_without_cosine --min-lr 0.001
train_refused min_lr_above_lr --schedule cosine --min-lr 1
train_refused schedule_unknown --schedule linear
train_refused task_unknown --task sort
train_refused precision_half --precision float16
train_refused norm_unknown --norm middle
train_refused attention_unknown --attention flash
train_refused attention_no_backward --attention linformer
train_refused window_for_softmax --attention softmax --window 4
train_refused feature_map_for_softmax --attention softmax --feature-map relu
train_refused feature_map_unknown --attention linear --feature-map tanh
train_refused data_for_copy --data /etc/hostname
train_refused pairs_for_copy --pairs 4
train_refused copy_length_for_recall --task recall --copy-length 3
train_refused copy_length_too_long --copy-length 5
train_refused recall_too_many_pairs --task recall --pairs 3
train_refused recall_vocab_small --task recall --pairs 2 --vocab 4
train_refused recall_odd_seq_len --task recall --pairs 1 --seq-len 9
train_refused text_no_data --task text
train_refused text_missing --task text --data missing.txt
: >empty.txt
train_refused text_empty --task text --data empty.txt
train_refused text_directory --task text --data .
train_refused threads_zero --threads 0
train_refused unknown_flag --bogus 1
train_refused flag_twice --lr 0.1 --lr 0.2
train_refused resume_missing --resume nowhere
mkdir notack
train_refused resume_not_checkpoint --resume notack
rmdir notack

# --checkpoint naming a file, or a folder holding other files: refused, never replaced
echo keep >file.txt
# shellcheck disable=SC2086
refused checkpoint_is_file train $tiny --checkpoint file.txt
[ "$(cat file.txt)" = keep ] || fail checkpoint_is_file "file.txt replaced"
mkdir mine && echo keep >mine/notes.txt
# shellcheck disable=SC2086
refused checkpoint_other_folder train $tiny --checkpoint mine
[ "$(cat mine/notes.txt)" = keep ] && [ "$(ls mine)" = notes.txt ] ||
    fail checkpoint_other_folder "the folder was changed"

# a damaged checkpoint: refused on --resume, left as it was
# shellcheck disable=SC2086
if "$bin" train $tiny --checkpoint good >/dev/null 2>err.txt; then
    cp -r good damaged
    printf 'linattn-train-checkpoint 1\nvocab many\n' >damaged/checkpoint.txt
    refused resume_damaged_text train --resume damaged
    cp good/checkpoint.txt damaged/
    rm damaged/head.bias.npy
    refused resume_missing_tensor train --resume damaged --steps 4
    cp good/embedding.weight.npy damaged/head.bias.npy
    refused resume_misshapen_tensor train --resume damaged --steps 4
    refused resume_other_vocab train --resume good --steps 4 --task recall --pairs 1
    refused resume_no_more_steps train --resume good --steps 1
else
    fail resume_damaged_text "the good run failed: $(head -c 200 err.txt)"
fi

# a control character in --data's path: the error stays one line; a file of that name
# cannot be recorded in a checkpoint (its text is one line per setting): refused before
# the run
train_refused data_path_newline --task text --data "$(printf 'a\nb.txt')"
nl_name=$(printf 'a\nb.txt')
i=0
while [ $i -lt 40 ]; do echo "some text to learn from, line $i" >>"$nl_name"; i=$((i + 1)); done
train_refused data_path_newline_checkpoint --task text --data "$nl_name"

exit $failed
